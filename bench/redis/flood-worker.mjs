// One gateway process of the flood scenario of bench/redis/run.mjs (forked by it, never run alone).
// It builds every contender, each with an ioredis client of its own, and on command runs the login
// path of a gateway for a fixed time: 9 requests in 10 come from one attacker (always a wrong
// password, locked out since the warm-up), 1 in 10 from legitimate clients spread over 250
// addresses per process (always the right password, so never near their limit).
//
// What a login attempt is, per contender (what each library's documentation tells a gateway to do):
// - Portcullis (createFailureLimiter over RedisStore, the gateway of DESIGN.md 3.2): `check` before
//   the password is compared (refused: 429); a wrong password is `recordFailure`, a right one
//   `recordSuccess`. 10 failures / 60 s, then a 300 s lockout.
// - rate-limiter-flexible RateLimiterRedis: `consume` first (rejected: 429), then `delete` on the
//   right password (points 10, duration 60 s, blockDuration 300 s); with inMemoryBlockOnConsumed 10
//   and inMemoryBlockDuration 300 s, a consumed key is refused by the process itself.
// - express-rate-limit + rate-limit-redis: the middleware with `skipSuccessfulRequests` (limit 10
//   per 60 s; a 2xx response gives its hit back on 'finish').
import { EventEmitter } from 'node:events';
import { createFailureLimiter } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { rateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

const ATTACKER = '203.0.113.66';
const MAX_ATTEMPTS = 10;
const WINDOW_MS = 60_000;
const LOCKOUT_MS = 300_000;

let config;
const contenders = new Map();

async function connect() {
  const client = new Redis({ host: '127.0.0.1', port: config.port, lazyConnect: true });
  await client.connect();
  return client;
}

async function portcullis(name, localDeny) {
  const client = await connect();
  const store = new RedisStore({
    sendCommand: (args) => client.call(args[0], ...args.slice(1)),
    prefix: `flood-pc-${localDeny ? 'deny' : 'plain'}:`,
    ...(!localDeny && { localDeny: false }),
  });
  const limiter = createFailureLimiter({
    store,
    maxAttempts: MAX_ATTEMPTS,
    windowMs: WINDOW_MS,
    lockoutMs: LOCKOUT_MS,
  });
  return {
    name,
    attempt: async (ip, right) => {
      if (!(await limiter.check(ip)).allowed) return false;
      await (right ? limiter.recordSuccess(ip) : limiter.recordFailure(ip));
      return true;
    },
    close: () => {
      limiter.close();
      store.close();
      client.disconnect();
    },
  };
}

async function flexible(name, inMemory) {
  const client = await connect();
  const limiter = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: `flood-rlf-${inMemory ? 'mem' : 'plain'}`,
    points: MAX_ATTEMPTS,
    duration: WINDOW_MS / 1000,
    blockDuration: LOCKOUT_MS / 1000,
    ...(inMemory && {
      inMemoryBlockOnConsumed: MAX_ATTEMPTS,
      inMemoryBlockDuration: LOCKOUT_MS / 1000,
    }),
  });
  return {
    name,
    attempt: async (ip, right) => {
      try {
        await limiter.consume(ip);
      } catch (res) {
        if (res instanceof Error) throw res;
        return false;
      }
      if (right) await limiter.delete(ip);
      return true;
    },
    close: () => client.disconnect(),
  };
}

async function expressRateLimit(name) {
  const client = await connect();
  const middleware = rateLimit({
    windowMs: WINDOW_MS,
    limit: MAX_ATTEMPTS,
    skipSuccessfulRequests: true,
    standardHeaders: false,
    legacyHeaders: false,
    validate: false,
    keyGenerator: (req) => req.key,
    store: new RateLimitRedisStore({
      sendCommand: (...args) => client.call(...args),
      prefix: 'flood-rlr:',
    }),
  });
  class Response extends EventEmitter {
    statusCode = 200;
    headersSent = false;
    writableEnded = false;
    setHeader() {}
    append() {}
    status(code) {
      this.statusCode = code;
      return this;
    }
    send() {
      this.writableEnded = true;
    }
  }
  return {
    name,
    attempt: (ip, right) =>
      new Promise((resolve, reject) => {
        const req = { key: ip, ip, headers: {}, app: { get: () => false } };
        const res = new Response();
        let passed = false;
        middleware(req, res, (error) => {
          if (error) reject(error);
          passed = true;
        }).then(() => {
          // The handler (or the 429) answered: the response ends.
          if (passed) res.statusCode = right ? 200 : 401;
          res.emit('finish');
          resolve(passed);
        }, reject);
      }),
    close: () => client.disconnect(),
  };
}

const builders = {
  'portcullis-default': (n) => portcullis(n, true),
  'portcullis-no-deny': (n) => portcullis(n, false),
  'rlf-in-memory': (n) => flexible(n, true),
  'rlf-plain': (n) => flexible(n, false),
  'erl-rlr': (n) => expressRateLimit(n),
};

/** Runs the traffic mix on `c` until `endAt` with `concurrency` attempts in flight. */
async function flood(c, endAt) {
  let i = 0;
  let decisions = 0;
  let attackerPassed = 0;
  let legitRefused = 0;
  const legitPerProcess = config.legit;
  async function worker() {
    while (performance.now() < endAt) {
      const n = i++;
      if (n % 10 === 9) {
        const j = Math.floor(n / 10) % legitPerProcess;
        const ip = `198.51.${config.index}.${j}`;
        if (!(await c.attempt(ip, true))) legitRefused++;
      } else if (await c.attempt(ATTACKER, false)) attackerPassed++;
      decisions++;
    }
  }
  await Promise.all(Array.from({ length: config.concurrency }, worker));
  return { decisions, attackerPassed, legitRefused };
}

process.on('message', async (m) => {
  try {
    if (m.type === 'init') {
      config = m;
      for (const name of m.contenders) contenders.set(name, await builders[name](name));
      process.send({ type: 'ready' });
    } else if (m.type === 'warm') {
      // Locks the attacker out (and loads scripts, JIT): 300 ms of the same mix.
      const c = contenders.get(m.name);
      const r = await flood(c, performance.now() + m.ms);
      process.send({ type: 'warmed', ...r });
    } else if (m.type === 'run') {
      const c = contenders.get(m.name);
      // Every process starts at the same instant (the wall clock is shared by the forks).
      await new Promise((r) => setTimeout(r, Math.max(0, m.startAt - Date.now())));
      const start = performance.now();
      const r = await flood(c, start + m.ms);
      process.send({ type: 'done', ...r, seconds: (performance.now() - start) / 1000 });
    } else if (m.type === 'close') {
      for (const c of contenders.values()) c.close();
      process.disconnect();
    }
  } catch (error) {
    process.send({ type: 'error', message: String(error?.stack ?? error) });
  }
});
