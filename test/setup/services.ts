// Vitest global setup of the projects that need more than Node (vitest.config.ts): brings up what
// the run needs, so that `npm test` on a fresh clone needs no other command.
//
// 1. Builds every publishable package whose dist is missing or stale (scripts/build-if-stale.mjs,
//    under the build lock): the packaging test packs dist, and the multi-process tests start
//    server processes that load it. Unit tests import the sources and need no build.
// 2. Finds a Redis: the one at REDIS_URL (default redis://127.0.0.1:6379) when it answers PING;
//    otherwise, when `redis-server` is on the PATH, a private one on a free port of 127.0.0.1 (no
//    persistence), stopped by its PID at teardown. Tests and the processes they start read the
//    address from REDIS_URL. When neither works, the Redis tests fail saying which command fixes it.
//
// Chromium is found by test/support/chromium.ts when a browser test launches it.
//
// Several projects list this file and Vitest runs it once per project in the same process, so
// the work is done once (state on globalThis) and undone by the last teardown.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

interface Services {
  users: number;
  redis?: ChildProcess | undefined;
}

const KEY = Symbol.for('portcullis.test.services');
const shared = globalThis as typeof globalThis & { [KEY]?: Promise<Services> };

const say = (line: string) => process.stderr.write(`[test setup] ${line}\n`);

/** Sends PING to host:port and resolves true on `+PONG` within 1 s (never rejects). */
function ping(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts a private redis-server on a free port; resolves once it answers PING. */
async function startPrivateRedis(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  // Not detached: a Ctrl-C on the test run reaches it too.
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const exited = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) at start`)));
  });
  const up = (async () => {
    const deadline = Date.now() + 10_000;
    while (!(await ping('127.0.0.1', port))) {
      if (Date.now() > deadline) throw new Error('redis-server did not answer within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  try {
    await Promise.race([up, exited]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  exited.catch(() => {}); // its exit at teardown is expected
  return { child, url: `redis://127.0.0.1:${port}` };
}

async function bringUp(): Promise<Services> {
  const services: Services = { users: 0 };

  try {
    execFileSync(process.execPath, [`${REPO}/scripts/build-if-stale.mjs`], {
      cwd: REPO,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  } catch {
    // The tests that load dist check it themselves and fail naming the package.
    say('building the packages failed (errors above); the tests that load dist will fail');
  }

  const explicit = process.env.REDIS_URL;
  const wanted = new URL(explicit || DEFAULT_REDIS_URL);
  const host = wanted.hostname.replace(/^\[|\]$/g, '');
  const port = Number(wanted.port || 6379);
  if (await ping(host, port)) {
    process.env.REDIS_URL = wanted.href;
  } else if (onPath('redis-server')) {
    try {
      const { child, url } = await startPrivateRedis();
      services.redis = child;
      process.env.REDIS_URL = url;
      say(
        `nothing answered at ${wanted.href}: started a private redis-server (pid ${child.pid}) at ${url}`,
      );
    } catch (error) {
      say(
        `nothing answered at ${wanted.href} and redis-server failed to start: ${(error as Error).message}`,
      );
    }
  } else {
    process.env.REDIS_URL = wanted.href;
    say(
      `nothing answers at ${wanted.href} and redis-server is not installed, so the Redis tests will fail. ` +
        'Fix: apt-get install redis-server (or brew install redis); the setup then starts its own.',
    );
  }
  return services;
}

export default async function setup(_project: TestProject): Promise<() => Promise<void>> {
  shared[KEY] ??= bringUp();
  const services = await shared[KEY];
  services.users += 1;
  return async () => {
    services.users -= 1;
    if (services.users > 0) return;
    delete shared[KEY];
    const redis = services.redis;
    services.redis = undefined;
    if (redis && redis.exitCode === null && redis.signalCode === null) {
      const gone = new Promise((r) => redis.once('exit', r));
      redis.kill('SIGTERM');
      const timer = setTimeout(() => redis.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
    }
  };
}
