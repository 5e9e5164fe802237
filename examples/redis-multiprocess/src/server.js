// One server process (src/main.js starts two). Both keep their limits in the same Redis under the
// same prefix, so a lockout taken through one is refused by the other, and they spend one budget.
// Environment: NAME, PORT, REDIS_URL, REDIS_PREFIX, LOGIN_PASSWORD.
import { createHash, timingSafeEqual } from 'node:crypto';
import { authGuard, rateLimit } from '@portcullis/express';
import { RedisStore } from '@portcullis/redis';
import express from 'express';
import { Redis } from 'ioredis';

const name = process.env.NAME ?? 'A';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// Fail at start rather than run on the in-memory fallback without shared limits.
const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
/** @type {Error | undefined} */
let lastError;
redis.on('error', (error) => {
  lastError = error; // outages after start are the store's business (onError, logged once)
});
await redis.connect().catch((/** @type {Error} */ error) => {
  console.error(
    `server ${name}: Redis unreachable at ${redisUrl}: ${(lastError ?? error).message}`,
  );
  process.exit(1);
});

const store = new RedisStore({
  sendCommand: ([command, ...args]) => redis.call(/** @type {string} */ (command), ...args),
  prefix: process.env.REDIS_PREFIX ?? 'portcullis-example:',
  logger: console,
});

/** @param {string} value */
const digest = (value) => createHash('sha256').update(value).digest();
const expected = digest(process.env.LOGIN_PASSWORD || 'open sesame');

const app = express();
app.use((_req, res, next) => {
  res.setHeader('X-Served-By', name); // so you can see which process answered, refusals included
  next();
});
app.post(
  '/login',
  authGuard({
    scope: 'password',
    store,
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
    res.json({ ok: true, server: name });
  },
);
app.get(
  '/api/hello',
  rateLimit({ store, name: 'api', limit: 10, windowMs: 60_000 }),
  (req, res) => {
    res.json({ hello: 'world', server: name, remaining: req.rateLimit?.remaining });
  },
);

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.send?.({ name, pid: process.pid, url: `http://127.0.0.1:${port}` });
});

// Stops once, whichever comes first: Ctrl-C (the whole process group gets SIGINT), SIGTERM from the
// launcher, or the launcher going away (the IPC channel closes). Disconnecting twice would throw.
let stopped = false;
function stop() {
  if (stopped) return;
  stopped = true;
  server.close();
  server.closeAllConnections();
  store.close();
  redis.disconnect();
  if (process.connected) process.disconnect();
}
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.once('disconnect', stop); // the launcher went away
