// `npm start`: two server processes on 127.0.0.1 (PORT and PORT + 1, default 3100 and 3101;
// PORT=0 picks free ports) sharing their limits through Redis under one prefix per run.
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';

const base = Number(process.env.PORT ?? 3100);
const prefix = process.env.REDIS_PREFIX || `portcullis-example:${randomUUID().slice(0, 8)}:`;
let stopping = false;

const servers = ['A', 'B'].map((name, i) => {
  const env = { ...process.env, NAME: name, PORT: String(base && base + i), REDIS_PREFIX: prefix };
  const child = fork(new URL('./server.js', import.meta.url), { env });
  child.on('exit', (code, signal) => {
    if (stopping) return;
    console.error(`server ${name} exited (${signal ?? code}); stopping the other`);
    stop(1);
  });
  /** @type {Promise<{ name: string, pid: number, url: string }>} */
  const ready = new Promise((resolve) => child.once('message', resolve));
  return { child, ready };
});

/** @param {number} code */
function stop(code) {
  stopping = true;
  process.exitCode = code;
  for (const { child } of servers) if (child.connected) child.kill('SIGTERM');
}
process.once('SIGINT', () => stop(0));
process.once('SIGTERM', () => stop(0));

const [a, b] = await Promise.all(servers.map((s) => s.ready));
if (a && b)
  console.log(`two servers share their limits through Redis (prefix ${prefix})
  server ${a.name} (pid ${a.pid}) ${a.url}
  server ${b.name} (pid ${b.pid}) ${b.url}
  POST /login with "Authorization: Bearer <password>" (LOGIN_PASSWORD, default "open sesame"):
       5 wrong passwords in a minute, through either server → both refuse for a minute
  GET  /api/hello: 10 requests a minute per client, counted across both servers`);
