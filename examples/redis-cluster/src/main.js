// `npm start`: a local Redis Cluster (3 primaries + 3 replicas, src/local-cluster.js; skipped when
// REDIS_CLUSTER names an existing one) and WORKERS gateway processes (default 3) behind one port
// (PORT, default 3200; 0 picks a free one), forked with Node's `cluster` module: the primary
// process accepts connections and hands them to the workers in turn. Ctrl-C stops the workers,
// then the Redis Cluster this started.
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startLocalCluster } from './local-cluster.js';

const count = Math.max(2, Number(process.env.WORKERS ?? 3));
const prefix = process.env.REDIS_PREFIX || `portcullis-example:${randomUUID().slice(0, 8)}:`;
let stopping = false;
/** @type {Awaited<ReturnType<typeof startLocalCluster>> | undefined} */
let local;

async function stop(/** @type {number} */ code) {
  if (stopping) return;
  stopping = true;
  process.exitCode = code;
  const workers = Object.values(cluster.workers ?? {});
  await Promise.all(
    workers.map((w) => {
      if (!w || w.isDead()) return undefined;
      const exited = new Promise((r) => w.once('exit', r));
      w.process.kill('SIGTERM');
      return exited;
    }),
  );
  await local?.stop();
}
process.once('SIGINT', () => stop(0));
process.once('SIGTERM', () => stop(0));

let nodes = process.env.REDIS_CLUSTER;
if (!nodes) {
  try {
    local = await startLocalCluster();
  } catch (error) {
    console.error(
      `could not start a local Redis Cluster (${/** @type {Error} */ (error).message}); ` +
        'install redis-server and redis-cli (apt-get install redis-server, brew install redis), ' +
        'or set REDIS_CLUSTER=host:port,… to use a running cluster',
    );
    process.exit(1);
  }
  nodes = local.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  console.log(
    `Redis Cluster: 3 primaries + 3 replicas on ${nodes} (pids ${local.pids.join(' ')}; ` +
      `nothing persisted, node files in ${local.dir})`,
  );
}
if (stopping) process.exit();

cluster.setupPrimary({ exec: fileURLToPath(new URL('./gateway.js', import.meta.url)) });
const env = {
  REDIS_CLUSTER: nodes,
  REDIS_PREFIX: prefix,
  PORT: process.env.PORT ?? '3200',
};
/** @type {Promise<number>[]} */
const listening = [];
for (let i = 0; i < count; i++) {
  const worker = cluster.fork(env);
  listening.push(
    new Promise((resolve) => worker.once('listening', (address) => resolve(address.port))),
  );
  worker.on('exit', (code, signal) => {
    if (stopping) return;
    console.error(`worker ${worker.id} exited (${signal ?? code}); stopping the gateway`);
    stop(1).catch((error) => {
      console.error('gateway: stopping the workers failed', error);
      process.exit(1);
    });
  });
}
const [port] = await Promise.all(listening);
if (!stopping) {
  const pids = Object.values(cluster.workers ?? {}).map((w) => w?.process.pid);
  console.log(`gateway: ${count} worker processes (pids ${pids.join(' ')}) behind http://127.0.0.1:${port}
  sharing their limits through the Redis Cluster (prefix ${prefix})
  POST /login       "Authorization: Bearer <password>" (LOGIN_PASSWORD, default "open sesame"):
                    5 wrong passwords a minute lock the client out of every worker for a minute
  GET  /api/hello   10 a minute per client, counted across the workers (onError 'open')
  POST /api/export  2 a minute per client (onError 'closed': 503 while its Redis shard is down)
  Ctrl-C stops the workers and the Redis Cluster`);
}
