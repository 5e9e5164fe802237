// One gateway worker (src/main.js forks several with Node's `cluster` module; they all accept
// connections on the same port). Every worker talks to the same Redis Cluster, so a lockout taken
// through one worker is refused by all, and they spend one request budget.
// Environment: REDIS_CLUSTER (host:port,… of some cluster nodes), REDIS_PREFIX, LOGIN_PASSWORD,
// PORT.
import cluster from 'node:cluster';
import { createHash, timingSafeEqual } from 'node:crypto';
import { authGuard, rateLimit } from '@portcullis/express';
import { RedisStore } from '@portcullis/redis';
import express from 'express';
import { Cluster } from 'ioredis';

const worker = `worker ${cluster.worker?.id ?? 0}`;
const nodes = (process.env.REDIS_CLUSTER ?? '127.0.0.1:7000').split(',').map((address) => {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
});

// One client per process; it learns the slot map from any node it is given and follows MOVED/ASK
// when slots move or a replica is promoted.
const redis = new Cluster(nodes, { lazyConnect: true, redisOptions: { connectTimeout: 2000 } });
/** @type {Error | undefined} */
let lastError;
redis.on('error', (error) => {
  lastError = error; // outages after start are the stores' business (onError, logged once)
});
redis.on('node error', () => {});
// Fail at start rather than run on the in-memory fallback without shared limits.
await redis.connect().catch((/** @type {Error} */ error) => {
  console.error(
    `${worker}: Redis Cluster unreachable at ${process.env.REDIS_CLUSTER}: ${(lastError ?? error).message}`,
  );
  process.exit(1);
});

/** @type {import('@portcullis/redis').SendCommand} */
const sendCommand = ([command, ...args]) => redis.call(/** @type {string} */ (command), ...args);
// Every script call touches one key, and ioredis routes it to the primary of that key's slot. No
// hash tag in the prefix: the keys spread over every shard.
const prefix = process.env.REDIS_PREFIX ?? 'portcullis:';
// One store per onError policy, all on the same client and prefix (the limiters' names keep their
// keys apart). While the Redis shard of a key fails over, each limiter answers as chosen here.
const logins = new RedisStore({
  sendCommand,
  prefix,
  onError: 'fallback',
  timeoutMs: 500,
  logger: console,
});
const api = new RedisStore({
  sendCommand,
  prefix,
  onError: 'open',
  timeoutMs: 250,
  logger: console,
});
const exports_ = new RedisStore({
  sendCommand,
  prefix,
  onError: 'closed',
  timeoutMs: 500,
  logger: console,
});

/** @param {string} value */
const digest = (value) => createHash('sha256').update(value).digest();
const expected = digest(process.env.LOGIN_PASSWORD || 'open sesame');

const app = express();
app.use((_req, res, next) => {
  res.setHeader('X-Served-By', `${worker} (pid ${process.pid})`); // refusals included
  next();
});
app.post(
  '/login',
  authGuard({
    scope: 'password',
    store: logins,
    maxAttempts: 5,
    windowMs: 60_000,
    lockoutMs: 60_000,
    exemptLoopback: false,
    verify: (req) => {
      const given = req.get('authorization')?.replace(/^Bearer /, '');
      if (!given) return 'missing';
      return timingSafeEqual(digest(given), expected) ? 'ok' : 'invalid';
    },
  }),
  (_req, res) => {
    res.json({ ok: true, worker });
  },
);
app.get(
  '/api/hello',
  rateLimit({ store: api, name: 'api', limit: 10, windowMs: 60_000 }),
  (req, res) => {
    res.json({ hello: 'world', worker, remaining: req.rateLimit?.remaining });
  },
);
app.post(
  '/api/export',
  rateLimit({ store: exports_, name: 'export', limit: 2, windowMs: 60_000 }),
  (_req, res) => {
    res.json({ exported: true, worker });
  },
);

// Workers share the primary's listening socket: the same port for all of them.
const server = app.listen(Number(process.env.PORT ?? 3200), '127.0.0.1', () => {
  process.send?.({ listening: true });
});

// Stops once, whichever comes first: Ctrl-C (the whole process group gets SIGINT), SIGTERM from the
// primary, or the primary going away (the IPC channel closes).
let stopped = false;
function stop() {
  if (stopped) return;
  stopped = true;
  server.close();
  server.closeAllConnections();
  for (const store of [logins, api, exports_]) store.close();
  redis.disconnect();
  if (process.connected) process.disconnect();
}
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.once('disconnect', stop);
