// The first example of packages/redis/README.md (the code between the markers is the README's).
// snippet:start
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createFailureLimiter, createWindowLimiter } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { Redis } from 'ioredis';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const store = new RedisStore({
  sendCommand: (args) => redis.call(args[0], ...args.slice(1)),
  // One subscriber connection: a reset in any process ends local refusals in every process.
  subscribe: (channel, onMessage) => {
    const sub = redis.duplicate();
    sub.on('message', (ch, message) => ch === channel && onMessage(message));
    sub.subscribe(channel);
    return () => sub.disconnect(); // called by store.close()
  },
  // This run's keys only; the default prefix is 'portcullis:'.
  prefix: `readme-${randomBytes(4).toString('hex')}:`,
});

const auth = createFailureLimiter({ store }); // 10 failures / 60 s → 5 min lockout
const api = createWindowLimiter({ store, limit: 100, windowMs: 60_000, name: 'api' });

const d = await auth.check('203.0.113.7', 'device-token'); // Decision
for (let i = 0; i < 10; i++) await auth.recordFailure('203.0.113.7', 'device-token');
const locked = await auth.check('203.0.113.7', 'device-token');
const spent = await api.consume('user-42', 3);
const show = ({ allowed, reason, remaining, retryAfterMs }) =>
  `${allowed} ${reason} ${remaining} ${Math.ceil(retryAfterMs / 1000)}s`;
console.log(show(d), '|', show(locked), '|', show(spent), '| keys:', await store.size());
assert.equal(locked.reason, 'locked'); // decided in Redis: every process that shares it agrees

await auth.reset('203.0.113.7', 'device-token'); // an admin action: lifts the lockout
await api.reset('user-42');
console.log('keys after reset:', await store.size());
store.close();
await redis.quit();
// snippet:end
