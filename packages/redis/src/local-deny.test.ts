// The local deny table of RedisStore: refusals answered by the process without Redis, exactly as
// Redis would answer them, invalidated everywhere through pub/sub, bounded in size and staleness.
// Against the real Redis of the test setup (nothing skips without it).
import {
  createFailureLimiter,
  createWindowLimiter,
  type Decision,
  type FailureRule,
  type WindowRule,
} from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { Redis as IORedis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deletePrefix,
  ioredis,
  REDIS_HOST,
  REDIS_PORT,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { RedisStore, type RedisStoreOptions, type SendCommand, type Subscribe } from './index.js';

const fixed: WindowRule = { algorithm: 'fixed-window', limit: 2, windowMs: 1000 };
const sliding: WindowRule = { algorithm: 'sliding-window', limit: 4, windowMs: 1000 };
const lock: FailureRule = { maxAttempts: 2, windowMs: 1000, lockoutMs: 300_000 };

let client: TestClient;
beforeAll(async () => {
  client = await ioredis.connect();
});
afterAll(() => client?.close());

/**
 * Whether a command keeps the lockout index (an `i` script on `~lockouts{…}`, or the slot
 * registry): it follows a lockout start, beside the decision, and is not what these tests count.
 */
const indexing = (args: string[]) =>
  (args[0] === 'EVALSHA' && args[4] === 'i') || String(args[1]).includes('~lockouts-slots');

/** A sendCommand on the shared client that counts what it sends (the lockout index apart). */
function counting() {
  const sent: string[][] = [];
  const send: SendCommand = (args, key) => {
    if (!indexing(args)) sent.push(args);
    return client.sendCommand(args, key);
  };
  return { send, sent, count: () => sent.length, names: () => sent.map((a) => a[0]) };
}

/** The documented ioredis one-liner, plus a count of the messages handed to the store. */
async function ioredisSubscriber() {
  const redis = new IORedis({ host: REDIS_HOST, port: REDIS_PORT, lazyConnect: true });
  redis.on('error', () => {});
  await redis.connect();
  let received = 0;
  let ready: Promise<unknown> = Promise.resolve();
  let stopped = 0;
  const subscribe: Subscribe = (channel, onMessage) => {
    const sub = redis.duplicate();
    sub.on('message', (ch: string, m: string) => {
      if (ch !== channel) return;
      received++;
      onMessage(m);
    });
    ready = sub.subscribe(channel);
    return () => {
      stopped++;
      sub.disconnect();
    };
  };
  return {
    subscribe,
    received: () => received,
    stopped: () => stopped,
    ready: () => ready,
    close: () => redis.disconnect(),
  };
}

/** Polls until `fn()` holds (an invalidation travels through Redis); fails after 2 s. */
async function until(fn: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`not within 2s: ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Two stores on one prefix and one clock: `deny` (the default) and `plain` (localDeny off). */
function pair(options: Partial<RedisStoreOptions> = {}) {
  const clock = manualClock(1_000_000);
  const prefix = uniquePrefix('deny');
  const c = counting();
  const deny = new RedisStore({ sendCommand: c.send, prefix, clock, ...options });
  const plain = new RedisStore({
    sendCommand: client.sendCommand,
    prefix,
    clock,
    localDeny: false,
  });
  return {
    clock,
    prefix,
    c,
    deny,
    plain,
    async close() {
      deny.close();
      plain.close();
      await deletePrefix(client.sendCommand, prefix);
    },
  };
}

describe('local deny table: options', () => {
  const send: SendCommand = () => Promise.resolve(null);

  it.each<[string, unknown, string, string]>([
    ['localDeny a string', 'yes', 'ERR_PORTCULLIS_LOCAL_DENY', 'localDeny'],
    ['localDeny null', null, 'ERR_PORTCULLIS_LOCAL_DENY', 'localDeny'],
    ['localDeny an array', [], 'ERR_PORTCULLIS_LOCAL_DENY', 'localDeny'],
    ['maxEntries 0', { maxEntries: 0 }, 'ERR_PORTCULLIS_MAX_ENTRIES', 'localDeny.maxEntries'],
    ['maxEntries 1.5', { maxEntries: 1.5 }, 'ERR_PORTCULLIS_MAX_ENTRIES', 'localDeny.maxEntries'],
    [
      'maxEntries 2^24 + 1',
      { maxEntries: 2 ** 24 + 1 },
      'ERR_PORTCULLIS_MAX_ENTRIES',
      'localDeny.maxEntries',
    ],
    ['maxStaleMs 0', { maxStaleMs: 0 }, 'ERR_PORTCULLIS_MAX_STALE_MS', 'localDeny.maxStaleMs'],
    [
      'maxStaleMs NaN',
      { maxStaleMs: Number.NaN },
      'ERR_PORTCULLIS_MAX_STALE_MS',
      'localDeny.maxStaleMs',
    ],
    [
      'maxStaleMs "1000"',
      { maxStaleMs: '1000' },
      'ERR_PORTCULLIS_MAX_STALE_MS',
      'localDeny.maxStaleMs',
    ],
    ['an unknown name', { maxStale: 5 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION', 'localDeny.maxStale'],
  ])('%s is a config error', (_, localDeny, code, option) => {
    expect(
      () => new RedisStore({ sendCommand: send, localDeny } as unknown as RedisStoreOptions),
    ).toThrow(expect.objectContaining({ name: 'PortcullisConfigError', code, option }));
  });

  it('subscribe must be a function', () => {
    expect(
      () => new RedisStore({ sendCommand: send, subscribe: 'ch' } as unknown as RedisStoreOptions),
    ).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_SUBSCRIBE', option: 'subscribe' }));
  });

  it('defaults: on, 10 000 entries, 1 000 ms; true is the defaults; false is off', () => {
    const stats = { maxEntries: 10_000, maxStaleMs: 1000, entries: 0, answered: 0 };
    for (const localDeny of [undefined, true, {}]) {
      const store = new RedisStore({
        sendCommand: send,
        ...(localDeny !== undefined && { localDeny }),
      });
      expect(store.localDeny).toEqual(stats);
      store.close();
    }
    const custom = new RedisStore({
      sendCommand: send,
      localDeny: { maxEntries: 1, maxStaleMs: 5 },
    });
    expect(custom.localDeny).toMatchObject({ maxEntries: 1, maxStaleMs: 5 });
    custom.close();
    const off = new RedisStore({ sendCommand: send, localDeny: false });
    expect(off.localDeny).toBe(false);
    off.close();
  });
});

describe('local deny table: answers without Redis, exactly as Redis would', () => {
  it('a lockout: zero commands while it lasts, the same retryAfterMs as Redis, then Redis again', async () => {
    const p = pair();
    try {
      await p.deny.recordFailure('ip', lock);
      const started = await p.deny.recordFailure('ip', lock);
      expect(started).toMatchObject({
        reason: 'locked',
        retryAfterMs: 300_000,
        lockoutStarted: true,
      });
      const before = p.c.count();
      // Within maxStaleMs (1 000 ms) every operation is answered here, as Redis answers it: a
      // failure during a lockout neither counts nor extends it, a success lifts nothing.
      for (const step of [0, 1, 250, 500, 248]) {
        p.clock.advance(step);
        for (const op of ['checkFailures', 'recordFailure', 'recordSuccess'] as const) {
          const local = await p.deny[op]('ip', lock);
          expect(local).toEqual(await p.plain[op]('ip', lock));
          expect(local).toEqual({
            allowed: false,
            reason: 'locked',
            limit: 2,
            remaining: 0,
            retryAfterMs: 300_000 - (p.clock.now() - 1_000_000),
            resetMs: 300_000 - (p.clock.now() - 1_000_000),
            key: 'ip',
          });
        }
      }
      expect(p.c.count()).toBe(before);
      expect(p.deny.localDeny).toMatchObject({ entries: 1, answered: 15 });
      // maxStaleMs after Redis decided: one call to Redis, which confirms it for another second.
      p.clock.advance(1);
      expect(await p.deny.checkFailures('ip', lock)).toMatchObject({ retryAfterMs: 299_000 });
      expect(p.c.count()).toBe(before + 1);
      p.clock.advance(999);
      expect(await p.deny.recordFailure('ip', lock)).toMatchObject({ retryAfterMs: 298_001 });
      expect(p.c.count()).toBe(before + 1);
      // The lockout's last ms, then its end: Redis decides (the history is gone).
      p.clock.set(1_000_000 + 299_999);
      expect(await p.deny.checkFailures('ip', lock)).toMatchObject({ retryAfterMs: 1 });
      p.clock.advance(1);
      const n = p.c.count();
      expect(await p.deny.checkFailures('ip', lock)).toMatchObject({ allowed: true, remaining: 2 });
      expect(p.c.count()).toBe(n + 1);
    } finally {
      await p.close();
    }
  });

  it('a failure limiter over the store: a locked-out flood costs Redis nothing', async () => {
    const p = pair();
    const limiter = createFailureLimiter({ store: p.deny, maxAttempts: 3, clock: p.clock });
    try {
      for (let i = 0; i < 3; i++) await limiter.recordFailure('203.0.113.9');
      const before = p.c.count();
      for (let i = 0; i < 1000; i++) {
        const d = await limiter.check('203.0.113.9');
        expect(d.allowed).toBe(false);
        await limiter.recordFailure('203.0.113.9');
      }
      expect(p.c.count()).toBe(before);
      // Another client is untouched, and goes to Redis.
      expect(await limiter.check('203.0.113.10')).toMatchObject({ allowed: true, remaining: 3 });
      expect(p.c.count()).toBe(before + 1);
    } finally {
      await limiter.close();
      await p.close();
    }
  });

  it('a fixed window with nothing left: every cost and peek, locally, until it resets', async () => {
    const p = pair();
    try {
      expect(await p.deny.consume('k', fixed, 1)).toMatchObject({ allowed: true, remaining: 1 });
      // The call that spends the last unit already tells: nothing is left until the reset.
      expect(await p.deny.consume('k', fixed, 1)).toMatchObject({ allowed: true, remaining: 0 });
      const before = p.c.count();
      p.clock.advance(300);
      for (const cost of [1, 2, 5]) {
        const d = await p.deny.consume('k', fixed, cost);
        expect(d).toEqual(await p.plain.consume('k', fixed, cost));
        expect(d).toEqual({
          allowed: false,
          reason: 'limited',
          limit: 2,
          remaining: 0,
          retryAfterMs: 700,
          resetMs: 700,
          key: 'k',
        });
      }
      expect(await p.deny.peek('k', fixed)).toEqual(await p.plain.peek('k', fixed));
      expect(p.c.count()).toBe(before);
      p.clock.advance(700);
      expect(await p.deny.consume('k', fixed, 1)).toMatchObject({ allowed: true, remaining: 1 });
      expect(p.c.count()).toBe(before + 1);
    } finally {
      await p.close();
    }
  });

  it('a fixed window refused for a cost above what remains is not exhausted: Redis decides', async () => {
    const p = pair();
    try {
      await p.deny.consume('k', fixed, 1);
      expect(await p.deny.consume('k', fixed, 2)).toMatchObject({ allowed: false, remaining: 1 });
      const before = p.c.count();
      expect(await p.deny.consume('k', fixed, 1)).toMatchObject({ allowed: true, remaining: 0 });
      expect(p.c.count()).toBe(before + 1);
      expect(p.deny.localDeny).toMatchObject({ entries: 1, answered: 0 });
    } finally {
      await p.close();
    }
  });

  it('a sliding window blocked for a unit: its decaying wait, locally; other costs ask Redis', async () => {
    const p = pair();
    try {
      for (let i = 0; i < 4; i++) await p.deny.consume('s', sliding, 1);
      p.clock.advance(1200); // next window: prev 4, 20 % in (weight 80 %: 3.2 units)
      // 3.2 + 1 > 4: refused; the weight drops under 3 at 25 % in: 50 ms from now.
      const refused = await p.deny.consume('s', sliding, 1);
      expect(refused).toEqual({
        allowed: false,
        reason: 'limited',
        limit: 4,
        remaining: 0,
        retryAfterMs: 50,
        resetMs: 800,
        key: 's',
      });
      const before = p.c.count();
      p.clock.advance(20);
      const local = await p.deny.consume('s', sliding, 1);
      expect(local).toEqual(await p.plain.consume('s', sliding, 1));
      expect(local).toMatchObject({ retryAfterMs: 30, resetMs: 780 });
      expect(await p.deny.peek('s', sliding)).toEqual(await p.plain.peek('s', sliding));
      // A cost above the limit never passes: one window advertised, locally too.
      expect(await p.deny.consume('s', sliding, 5)).toEqual(await p.plain.consume('s', sliding, 5));
      expect(p.c.count()).toBe(before);
      // A cost of 2 waits longer than a unit: Redis says how long.
      expect(await p.deny.consume('s', sliding, 2)).toEqual(await p.plain.consume('s', sliding, 2));
      expect(p.c.count()).toBe(before + 1);
      // ... and the unit's refusal is kept.
      expect(await p.deny.consume('s', sliding, 1)).toMatchObject({ retryAfterMs: 30 });
      expect(p.c.count()).toBe(before + 1);
      p.clock.advance(30);
      expect(await p.deny.consume('s', sliding, 1)).toMatchObject({ allowed: true });
      expect(p.c.count()).toBe(before + 2);
    } finally {
      await p.close();
    }
  });

  it('a token bucket is never held', async () => {
    const p = pair();
    const bucket: WindowRule = { algorithm: 'token-bucket', limit: 1, windowMs: 1000 };
    try {
      await p.deny.consume('t', bucket, 1);
      await p.deny.consume('t', bucket, 1);
      const before = p.c.count();
      expect(await p.deny.consume('t', bucket, 1)).toMatchObject({ allowed: false });
      expect(p.c.count()).toBe(before + 1);
      expect(p.deny.localDeny).toMatchObject({ entries: 0 });
    } finally {
      await p.close();
    }
  });

  it('a reconfigured rule, another algorithm or a failure rule on the key never hits the entry', async () => {
    const p = pair();
    try {
      await p.deny.consume('k', fixed, 2); // exhausted under limit 2
      const before = p.c.count();
      // The limit raised to 5: Redis decides, and lets 3 more through.
      const raised: WindowRule = { ...fixed, limit: 5 };
      expect(await p.deny.consume('k', raised, 1)).toEqual({
        allowed: true,
        reason: 'allowed',
        limit: 5,
        remaining: 2,
        retryAfterMs: 0,
        resetMs: 1000,
        key: 'k',
      });
      expect(p.c.count()).toBe(before + 1);
      // Redis re-ruled the key: the old entry went with it.
      expect(p.deny.localDeny).toMatchObject({ entries: 0 });
      // Another window length, another algorithm, the failure log: each its own answer.
      await p.deny.consume('k', raised, 2);
      expect(await p.deny.consume('k', { ...raised, windowMs: 500 }, 1)).toMatchObject({
        allowed: false,
        retryAfterMs: 500,
        limit: 5,
      });
      expect(await p.deny.consume('k', sliding, 1)).toMatchObject({ allowed: true, remaining: 3 });
      expect(await p.deny.checkFailures('k', lock)).toMatchObject({ allowed: true, remaining: 2 });
      expect(p.c.count()).toBe(before + 5);
    } finally {
      await p.close();
    }
  });

  it('a window limiter reconfigured live asks Redis under its new numbers at once', async () => {
    const p = pair();
    const limiter = createWindowLimiter({
      store: p.deny,
      limit: 1,
      windowMs: 60_000,
      clock: p.clock,
    });
    try {
      expect(await limiter.consume('u')).toMatchObject({ allowed: true, remaining: 0 });
      expect(await limiter.consume('u')).toMatchObject({ allowed: false, remaining: 0 });
      limiter.reconfigure({ limit: 3 });
      expect(await limiter.consume('u')).toMatchObject({ allowed: true, remaining: 1, limit: 3 });
    } finally {
      await limiter.close();
      await p.close();
    }
  });

  it('a clock stepping back drops the entry: Redis, which clamps, answers', async () => {
    const p = pair();
    try {
      await p.deny.recordFailure('ip', lock);
      await p.deny.recordFailure('ip', lock);
      const before = p.c.count();
      p.clock.set(1_000_000 - 1);
      // Redis clamps the lockout to lockoutMs from the new now: the same answer, from Redis.
      const d = await p.deny.checkFailures('ip', lock);
      expect(d).toEqual(await p.plain.checkFailures('ip', lock));
      expect(d).toMatchObject({ retryAfterMs: 300_000 });
      // The script call, and the PUBLISH that tells other processes the lockout now ends sooner.
      expect(p.c.count()).toBe(before + 2);
      // A step back of an hour: still never longer than lockoutMs, never an entry living on.
      p.clock.set(1_000_000 - 3_600_000);
      expect(await p.deny.checkFailures('ip', lock)).toMatchObject({ retryAfterMs: 300_000 });
      expect(p.c.count()).toBe(before + 4);
      // A clock jumping forward past the end: the entry ends.
      p.clock.set(1_000_000 + 10 * 300_000);
      expect(await p.deny.checkFailures('ip', lock)).toMatchObject({ allowed: true });
    } finally {
      await p.close();
    }
  });

  it('while Redis fails, the onError policy answers, as without the table', async () => {
    const clock = manualClock(0);
    let down = false;
    const prefix = uniquePrefix('deny-down');
    const store = new RedisStore({
      sendCommand: (args, key) =>
        down ? Promise.reject(new Error('connect ECONNREFUSED')) : client.sendCommand(args, key),
      prefix,
      clock,
      onError: 'closed',
    });
    try {
      await store.consume('k', fixed, 2);
      down = true;
      await store.consume('other', fixed, 1); // the outage starts
      expect(await store.consume('k', fixed, 1)).toMatchObject({ reason: 'store-error' });
    } finally {
      store.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('a reply that left Redis before a reset teaches nothing', async () => {
    const clock = manualClock(0);
    let release: (() => void) | undefined;
    const sent: string[] = [];
    const store = new RedisStore({
      sendCommand: (args) => {
        sent.push(args[0] as string);
        if (args[0] !== 'EVALSHA') return Promise.resolve(args[0] === 'DEL' ? 1 : 0);
        return new Promise((resolve) => {
          release = () => resolve([0, 0, 1000, 1000, 0]);
        });
      },
      clock,
    });
    try {
      const pending = store.consume('k', fixed, 1);
      await store.delete('k');
      release?.();
      expect(await pending).toMatchObject({ allowed: false, remaining: 0 });
      expect(store.localDeny).toMatchObject({ entries: 0 });
      const again = store.consume('k', fixed, 1);
      release?.();
      await again;
      expect(sent).toEqual(['EVALSHA', 'DEL', 'ZREM', 'PUBLISH', 'EVALSHA']);
      expect(store.localDeny).toMatchObject({ entries: 1 });
    } finally {
      store.close();
    }
  });
});

describe('local deny table: bounded', () => {
  it('100 000 distinct locked keys: at most maxEntries held, the newest answered locally', async () => {
    let sent = 0;
    const store = new RedisStore({
      // Each key locks at once (maxAttempts 1); the answer of a lockout just started.
      sendCommand: (args) => {
        // Each lockout start is also listed in the lockout index, beside the decision.
        if (indexing(args)) return Promise.resolve(1);
        sent++;
        return Promise.resolve([0, 0, 60_000, 60_000, 1]);
      },
      clock: manualClock(0),
      // The lockouts seen (fallback.maxEntries, 10 000) are bounded at a constant cost too.
    });
    const once: FailureRule = { maxAttempts: 1, windowMs: 1000, lockoutMs: 60_000 };
    try {
      const started = performance.now();
      for (let i = 0; i < 100_000; i += 1000) {
        await Promise.all(
          Array.from({ length: 1000 }, (_, j) => store.recordFailure(`k${i + j}`, once)),
        );
        expect((store.localDeny as { entries: number }).entries).toBeLessThanOrEqual(10_000);
      }
      // O(1) per key: 100 000 lockouts learnt in well under a few seconds.
      expect(performance.now() - started).toBeLessThan(5000);
      expect(store.localDeny).toMatchObject({ entries: 10_000 });
      expect(sent).toBe(100_000);
      // The 10 000 learnt last are answered locally; the oldest were evicted: Redis decides.
      await store.checkFailures('k99999', once);
      await store.checkFailures('k90000', once);
      expect(sent).toBe(100_000);
      await store.checkFailures('k89999', once);
      expect(sent).toBe(100_001);
    } finally {
      store.close();
    }
  });

  it('keys longer than 1 024 characters are never held', async () => {
    const p = pair();
    const long = 'x'.repeat(1025);
    try {
      await p.deny.consume(long, fixed, 2);
      expect(p.deny.localDeny).toMatchObject({ entries: 0 });
      await p.deny.consume('x'.repeat(1024), fixed, 2);
      expect(p.deny.localDeny).toMatchObject({ entries: 1 });
    } finally {
      await p.close();
    }
  });
});

describe('local deny table: invalidation across processes', () => {
  it('a reset in process B ends the lockout in process A at once, through A’s subscriber', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('deny-pubsub');
    const subA = await ioredisSubscriber();
    const a = counting();
    const storeA = new RedisStore({
      sendCommand: a.send,
      prefix,
      clock,
      subscribe: subA.subscribe,
    });
    const other = await ioredis.connect(); // process B: a connection of its own
    const storeB = new RedisStore({ sendCommand: other.sendCommand, prefix, clock });
    try {
      await subA.ready();
      await storeA.recordFailure('ip', lock);
      await storeA.recordFailure('ip', lock);
      const before = a.count();
      expect(await storeA.checkFailures('ip', lock)).toMatchObject({ reason: 'locked' });
      expect(a.count()).toBe(before);
      await storeB.delete('ip');
      await until(() => subA.received() === 1, 'the invalidation reaches A');
      // No time passed, well within maxStaleMs: the reset is in force in A.
      expect(await storeA.checkFailures('ip', lock)).toMatchObject({ allowed: true, remaining: 2 });
      expect(a.count()).toBe(before + 1);
    } finally {
      storeA.close();
      storeB.close();
      expect(subA.stopped()).toBe(1);
      subA.close();
      await other.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('the node-redis one-liner works the same, and close() unsubscribes', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('deny-node-redis');
    const base = createClient({ socket: { host: REDIS_HOST, port: REDIS_PORT } });
    base.on('error', () => {});
    await base.connect();
    let subscribed: Promise<unknown> = Promise.resolve();
    let sub: { isOpen: boolean; destroy(): void } | undefined;
    const storeA = new RedisStore({
      sendCommand: (args) => base.sendCommand(args),
      prefix,
      clock,
      subscribe: (channel, onMessage) => {
        subscribed = (async () => {
          const connection = await base.duplicate().connect();
          sub = connection;
          await connection.subscribe(channel, onMessage);
          return () => connection.destroy();
        })();
        return subscribed;
      },
    });
    const storeB = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
    try {
      await subscribed;
      await storeA.consume('k', fixed, 2);
      expect(await storeA.consume('k', fixed, 1)).toMatchObject({ allowed: false });
      expect(storeA.localDeny).toMatchObject({ entries: 1, answered: 1 });
      await storeB.delete('k');
      await until(
        () => (storeA.localDeny as { entries: number }).entries === 0,
        'the invalidation reaches A',
      );
      expect(await storeA.consume('k', fixed, 1)).toMatchObject({ allowed: true, remaining: 1 });
    } finally {
      storeA.close();
      storeB.close();
      await until(() => sub?.isOpen === false, 'the subscriber connection closes');
      base.destroy();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('a refund in B that reopens an exhausted window ends A’s refusal; one that does not publishes nothing', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('deny-refund');
    const subA = await ioredisSubscriber();
    const storeA = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: subA.subscribe,
    });
    const b = counting();
    const storeB = new RedisStore({ sendCommand: b.send, prefix, clock });
    const rule: WindowRule = { algorithm: 'fixed-window', limit: 3, windowMs: 60_000 };
    try {
      await subA.ready();
      await storeA.consume('k', rule, 3);
      expect(await storeA.consume('k', rule, 1)).toMatchObject({
        allowed: false,
        retryAfterMs: 60_000,
      });
      // skipSuccessfulRequests in B: the unit comes back, the window reopens.
      await storeB.refund('k', rule, 1, 0);
      expect(b.names()).toEqual(['EVALSHA', 'PUBLISH']);
      await until(() => subA.received() === 1, 'the invalidation reaches A');
      expect(await storeA.consume('k', rule, 1)).toMatchObject({ allowed: true, remaining: 0 });
      // A refund to a window that had room: nothing anyone holds changes, nothing is published.
      await storeB.refund('other', rule, 1, 0);
      await storeA.consume('spare', rule, 1);
      b.sent.length = 0;
      await storeB.refund('spare', rule, 1, 0);
      expect(b.names()).toEqual(['EVALSHA']);
      // A refund in this very process ends its refusal at once (no message needed).
      expect(await storeA.consume('k', rule, 1)).toMatchObject({ allowed: false });
      await storeA.refund('k', rule, 1, 0);
      expect(await storeA.consume('k', rule, 1)).toMatchObject({ allowed: true, remaining: 0 });
      // A sliding window blocked for a unit publishes too.
      for (let i = 0; i < 4; i++) await storeA.consume('s', sliding, 1);
      expect(await storeA.consume('s', sliding, 1)).toMatchObject({ allowed: false });
      const received = subA.received();
      b.sent.length = 0;
      await storeB.refund('s', sliding, 1, 0);
      expect(b.names()).toEqual(['EVALSHA', 'PUBLISH']);
      await until(() => subA.received() > received, 'the invalidation reaches A');
      expect(await storeA.consume('s', sliding, 1)).toMatchObject({ allowed: true });
    } finally {
      storeA.close();
      storeB.close();
      subA.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('without a message (lost, or no subscribe), a window refusal ends within maxStaleMs', async () => {
    const p = pair({ localDeny: { maxStaleMs: 200 } });
    try {
      await p.deny.consume('k', { ...fixed, windowMs: 60_000 }, 2);
      expect(await p.deny.consume('k', { ...fixed, windowMs: 60_000 }, 1)).toMatchObject({
        allowed: false,
      });
      // Process B resets the key; A never hears of it.
      await p.plain.delete('k');
      p.clock.advance(199);
      const stale = await p.deny.consume('k', { ...fixed, windowMs: 60_000 }, 1);
      expect(stale).toMatchObject({ allowed: false, retryAfterMs: 60_000 - 199 });
      p.clock.advance(1); // maxStaleMs after Redis decided
      expect(await p.deny.consume('k', { ...fixed, windowMs: 60_000 }, 1)).toMatchObject({
        allowed: true,
        remaining: 1,
      });
    } finally {
      await p.close();
    }
  });

  it('a limit reconfigured in another process only: A is stale for at most maxStaleMs', async () => {
    const p = pair({ localDeny: { maxStaleMs: 1500 } });
    const w1: WindowRule = { algorithm: 'fixed-window', limit: 2, windowMs: 60_000 };
    const w2: WindowRule = { ...w1, windowMs: 1000 }; // B's new numbers: 1 s windows
    try {
      await p.deny.consume('k', w1, 2); // A: nothing left for 60 s under its rule
      p.clock.advance(1100);
      // B, reconfigured, sees the window ended under its rule and starts a new one.
      expect(await p.plain.consume('k', w2, 1)).toMatchObject({ allowed: true, remaining: 1 });
      p.clock.advance(100);
      // Redis would now let A's unit through (the window B started has room): A, not told, still
      // refuses from its entry...
      expect(await p.deny.consume('k', w1, 1)).toMatchObject({ allowed: false });
      p.clock.advance(299);
      expect(await p.deny.consume('k', w1, 1)).toMatchObject({ allowed: false });
      // ... until maxStaleMs after Redis decided: then Redis answers.
      p.clock.advance(1);
      expect(await p.deny.consume('k', w1, 1)).toMatchObject({ allowed: true, remaining: 0 });
    } finally {
      await p.close();
    }
  });

  it('a step back after an end A did not see: A answers its entry again until its end, within maxStaleMs', async () => {
    const p = pair();
    const short: FailureRule = { maxAttempts: 2, windowMs: 60_000, lockoutMs: 300 };
    try {
      await p.deny.recordFailure('ip', short);
      expect(await p.deny.recordFailure('ip', short)).toMatchObject({ lockoutStarted: true });
      // B sees the lockout end (Redis forgets it); A, idle, learns nothing.
      p.clock.advance(400);
      expect(await p.plain.checkFailures('ip', short)).toMatchObject({
        allowed: true,
        remaining: 2,
      });
      // A's clock steps back to 200 ms after A learnt the lockout: its entry is live by that clock.
      p.clock.set(1_000_200);
      const before = p.c.count();
      expect(await p.deny.checkFailures('ip', short)).toEqual({
        allowed: false,
        reason: 'locked',
        limit: 2,
        remaining: 0,
        retryAfterMs: 100,
        resetMs: 100,
        key: 'ip',
      });
      expect(p.c.count()).toBe(before);
      // At the entry's end Redis answers again: nothing is locked there.
      p.clock.advance(100);
      expect(await p.deny.checkFailures('ip', short)).toMatchObject({
        allowed: true,
        remaining: 2,
      });
    } finally {
      await p.close();
    }
  });

  it('without subscribe, a lockout this process saw outlives a reset elsewhere (Redis forgetting it is treated as data loss)', async () => {
    const p = pair();
    try {
      await p.deny.recordFailure('ip', lock);
      await p.deny.recordFailure('ip', lock);
      await p.plain.delete('ip'); // another process, no subscriber here
      p.clock.advance(5000);
      const d: Decision = await p.deny.checkFailures('ip', lock);
      expect(d).toMatchObject({ allowed: false, reason: 'locked', retryAfterMs: 295_000 });
    } finally {
      await p.close();
    }
  });

  it('close() stops a subscription that resolves after it; a failing subscribe is logged once', async () => {
    let stopped = 0;
    let resolve: ((stop: () => void) => void) | undefined;
    const store = new RedisStore({
      sendCommand: () => Promise.resolve(null),
      subscribe: () =>
        new Promise((r) => {
          resolve = r;
        }),
    });
    store.close();
    resolve?.(() => stopped++);
    await new Promise((r) => setTimeout(r, 1));
    expect(stopped).toBe(1);
    const warned: string[] = [];
    const failing = new RedisStore({
      sendCommand: () => Promise.resolve(null),
      prefix: 'p:',
      logger: { warn: (_: object, m?: string) => warned.push(m ?? ''), error() {} },
      subscribe: () => Promise.reject(new Error('NOAUTH')),
    });
    await new Promise((r) => setTimeout(r, 1));
    expect(warned).toEqual([
      'RedisStore: subscribe to p:deny-invalidations failed (NOAUTH); resets made in other processes reach this one within localDeny.maxStaleMs',
    ]);
    failing.close();
  });
});
