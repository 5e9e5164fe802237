import { createHash } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  createFailureLimiter,
  createWindowLimiter,
  type FailureRule,
  type PortcullisEvent,
  type WindowRule,
} from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeState,
  deletePrefix,
  ioredis,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { type OnError, RedisStore, type RedisStoreOptions, type SendCommand } from './index.js';
import { SCRIPT, SCRIPT_SHA } from './script.js';

const fixed: WindowRule = { algorithm: 'fixed-window', limit: 2, windowMs: 1000 };
const failures: FailureRule = { maxAttempts: 3, windowMs: 60_000, lockoutMs: 300_000 };

/** A sendCommand that records every call and answers through `answer`. */
function fake(answer: (args: string[]) => unknown) {
  const calls: { args: string[]; key: string | undefined }[] = [];
  const send: SendCommand = (args, key) => {
    calls.push({ args, key });
    return Promise.resolve().then(() => answer(args));
  };
  return { send, calls, commands: () => calls.map((c) => c.args[0]) };
}

const refused = (message: string) => () => {
  throw Object.assign(new Error(message), { name: 'ReplyError' });
};

/** Captures logger calls. */
function memoryLogger() {
  const warn: string[] = [];
  const error: string[] = [];
  return {
    logger: {
      warn: (_: object, msg?: string) => warn.push(msg ?? ''),
      error: (_: object, msg?: string) => error.push(msg ?? ''),
    },
    warn,
    error,
  };
}

/** Unhandled rejections seen while a test runs (there must be none). */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});
afterEach(async () => {
  await new Promise((r) => setTimeout(r, 5));
  expect(unhandled).toEqual([]);
});

describe('RedisStore options', () => {
  const send: SendCommand = () => Promise.resolve(null);

  it.each<[string, unknown, string, string]>([
    ['no options', undefined, 'ERR_PORTCULLIS_SEND_COMMAND', 'sendCommand'],
    ['options null', null, 'ERR_PORTCULLIS_INVALID_OPTIONS', 'options'],
    ['missing sendCommand', {}, 'ERR_PORTCULLIS_SEND_COMMAND', 'sendCommand'],
    [
      'sendCommand not a function',
      { sendCommand: 'redis' },
      'ERR_PORTCULLIS_SEND_COMMAND',
      'sendCommand',
    ],
    [
      'unknown option',
      { sendCommand: send, client: {} },
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
      'client',
    ],
    ['prefix not a string', { sendCommand: send, prefix: 5 }, 'ERR_PORTCULLIS_PREFIX', 'prefix'],
    [
      'unknown onError',
      { sendCommand: send, onError: 'ignore' },
      'ERR_PORTCULLIS_ON_ERROR',
      'onError',
    ],
    ['timeoutMs 0', { sendCommand: send, timeoutMs: 0 }, 'ERR_PORTCULLIS_TIMEOUT_MS', 'timeoutMs'],
    [
      'timeoutMs NaN',
      { sendCommand: send, timeoutMs: Number.NaN },
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'timeoutMs',
    ],
    [
      'timeoutMs fraction',
      { sendCommand: send, timeoutMs: 1.5 },
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'timeoutMs',
    ],
    [
      'timeoutMs as a string',
      { sendCommand: send, timeoutMs: '100' },
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'timeoutMs',
    ],
    [
      'probeIntervalMs -1',
      { sendCommand: send, probeIntervalMs: -1 },
      'ERR_PORTCULLIS_PROBE_INTERVAL_MS',
      'probeIntervalMs',
    ],
    ['clock without now()', { sendCommand: send, clock: {} }, 'ERR_PORTCULLIS_CLOCK', 'clock'],
    [
      'logger without error()',
      { sendCommand: send, logger: { warn() {} } },
      'ERR_PORTCULLIS_LOGGER',
      'logger',
    ],
    [
      'fallback not an object',
      { sendCommand: send, fallback: 10 },
      'ERR_PORTCULLIS_FALLBACK',
      'fallback',
    ],
    [
      'fallback.maxEntries 0',
      { sendCommand: send, fallback: { maxEntries: 0 } },
      'ERR_PORTCULLIS_MAX_ENTRIES',
      'fallback.maxEntries',
    ],
  ])('%s is a config error', (_, options, code, option) => {
    expect(() => new RedisStore(options as RedisStoreOptions)).toThrow(
      expect.objectContaining({ name: 'PortcullisConfigError', code, option }),
    );
  });

  it('defaults: prefix portcullis:, onError fallback', () => {
    const store = new RedisStore({ sendCommand: send });
    expect(store.prefix).toBe('portcullis:');
    expect(store.onError).toBe('fallback');
    expect(store.degraded).toBe(false);
    store.close();
  });
});

describe('RedisStore commands', () => {
  it('sends EVALSHA with the SHA1 of the script, the prefixed key, and no time of its own', async () => {
    const f = fake(() => [1, 1, 0, 1000, 0]);
    const store = new RedisStore({ sendCommand: f.send, prefix: 'p:' });
    const d = await store.consume('k', fixed, 1);
    expect(d).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 1000,
      key: 'k',
    });
    expect(SCRIPT_SHA).toBe(createHash('sha1').update(SCRIPT).digest('hex'));
    expect(f.calls).toEqual([
      { args: ['EVALSHA', SCRIPT_SHA, '1', 'p:k', 'cf', '2', '1000', '1'], key: 'p:k' },
    ]);
    store.close();
  });

  it('maps each operation to its arguments', async () => {
    const f = fake(() => [1, 3, 0, 0, 0]);
    const clock = manualClock(42);
    const store = new RedisStore({ sendCommand: f.send, prefix: '', clock });
    await store.peek('a', { algorithm: 'sliding-window', limit: 4, windowMs: 10 });
    await store.consume('b', { algorithm: 'token-bucket', limit: 5, windowMs: 20 }, 3);
    await store.checkFailures('c', failures);
    await store.recordFailure('d', failures);
    expect(f.calls.map((c) => c.args.slice(2))).toEqual([
      ['1', 'a', 'ps', '4', '10', '1', '42'],
      ['1', 'b', 'ct', '5', '20', '3', '42'],
      ['1', 'c', 'k', '3', '60000', '300000', '42'],
      ['1', 'd', 'r', '3', '60000', '300000', '42'],
    ]);
    store.close();
  });

  it('maps a lockout start, and a refusal of each kind', async () => {
    const replies = [
      [0, 0, 300_000, 300_000, 1],
      [0, 0, 250, 250, 0],
      [0, 1, 400, 900, 0],
    ];
    const f = fake(() => replies.shift());
    const store = new RedisStore({ sendCommand: f.send });
    expect(await store.recordFailure('x', failures)).toEqual({
      allowed: false,
      reason: 'locked',
      limit: 3,
      remaining: 0,
      retryAfterMs: 300_000,
      resetMs: 300_000,
      key: 'x',
      lockoutStarted: true,
    });
    expect(await store.checkFailures('x', failures)).toEqual({
      allowed: false,
      reason: 'locked',
      limit: 3,
      remaining: 0,
      retryAfterMs: 250,
      resetMs: 250,
      key: 'x',
    });
    expect(await store.consume('y', fixed, 1)).toMatchObject({
      allowed: false,
      reason: 'limited',
      remaining: 1,
      retryAfterMs: 400,
      resetMs: 900,
    });
    store.close();
  });

  it('re-sends with EVAL only on NOSCRIPT, then goes back to EVALSHA', async () => {
    let loaded = false;
    const f = fake((args) => {
      if (args[0] === 'EVAL') {
        loaded = true;
        return [1, 1, 0, 1000, 0];
      }
      if (!loaded) throw new Error('NOSCRIPT No matching script. Please use EVAL.');
      return [1, 0, 0, 1000, 0];
    });
    const store = new RedisStore({ sendCommand: f.send });
    expect((await store.consume('k', fixed, 1)).remaining).toBe(1);
    expect((await store.consume('k', fixed, 1)).remaining).toBe(0);
    expect(f.commands()).toEqual(['EVALSHA', 'EVAL', 'EVALSHA']);
    const evalCall = f.calls[1]?.args ?? [];
    expect(evalCall[1]).toBe(SCRIPT);
    expect(evalCall.slice(2)).toEqual(f.calls[0]?.args.slice(2));
    store.close();
  });

  it.each([
    'ERR Error running script',
    'BUSY Redis is busy running a script',
    'LOADING Redis is loading',
    "READONLY You can't write against a read only replica.",
  ])('never retries on %s: the error policy decides', async (message) => {
    const f = fake(refused(message));
    const store = new RedisStore({ sendCommand: f.send, onError: 'closed' });
    expect(await store.consume('k', fixed, 1)).toMatchObject({
      allowed: false,
      reason: 'store-error',
    });
    expect(f.commands()).toEqual(['EVALSHA']);
    store.close();
  });

  it('treats a malformed reply as a store error', async () => {
    for (const reply of [null, 'OK', [1, 2, 3], { 0: 1 }]) {
      const store = new RedisStore({ sendCommand: fake(() => reply).send, onError: 'open' });
      expect(await store.consume('k', fixed, 1)).toMatchObject({
        allowed: true,
        reason: 'store-error',
      });
      store.close();
    }
  });

  it('a sendCommand that throws synchronously or rejects with a non-error is a store error', async () => {
    const throwing = new RedisStore({
      sendCommand: () => {
        throw new TypeError('client is closed');
      },
      onError: 'closed',
    });
    expect(await throwing.checkFailures('k', failures)).toMatchObject({
      allowed: false,
      reason: 'store-error',
    });
    throwing.close();
    const weird = new RedisStore({ sendCommand: () => Promise.reject('nope'), onError: 'closed' });
    expect(await weird.peek('k', fixed)).toMatchObject({ allowed: false, reason: 'store-error' });
    await weird.delete('k');
    weird.close();
  });
});

describe('RedisStore timeout', () => {
  it('answers through the policy after timeoutMs, ignores the late reply, waits on nothing else', async () => {
    const clock = manualClock(0);
    const pending: { resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = [];
    const send: SendCommand = () =>
      new Promise((resolve, reject) => {
        pending.push({ resolve, reject });
      });
    const store = new RedisStore({
      sendCommand: send,
      timeoutMs: 250,
      timers: clock,
      clock,
      onError: 'fallback',
    });
    let settled: unknown;
    const p = store.consume('k', fixed, 1).then((d) => {
      settled = d;
      return d;
    });
    clock.advance(249);
    await Promise.resolve();
    expect(settled).toBeUndefined();
    clock.advance(1);
    expect(await p).toMatchObject({ allowed: true, reason: 'fallback', remaining: 1 });
    // The late answers change nothing and raise nothing.
    pending[0]?.resolve([0, 0, 5, 5, 0]);
    // Redis is now considered down: the next call does not wait at all.
    expect(await store.consume('k', fixed, 1)).toMatchObject({
      allowed: true,
      reason: 'fallback',
      remaining: 0,
    });
    expect(pending).toHaveLength(1);
    store.close();
    // Neither a timeout timer nor the fallback's sweep is left behind.
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a late rejection after the timeout is swallowed', async () => {
    const clock = manualClock(0);
    let reject: (e: unknown) => void = () => {};
    const send: SendCommand = () =>
      new Promise((_, rej) => {
        reject = rej;
      });
    const store = new RedisStore({
      sendCommand: send,
      timeoutMs: 10,
      timers: clock,
      clock,
      onError: 'closed',
    });
    const p = store.recordFailure('k', failures);
    clock.advance(10);
    expect(await p).toMatchObject({ reason: 'store-error', allowed: false });
    reject(new Error('Connection is closed.'));
    store.close();
  });

  it('no EVAL is sent when NOSCRIPT arrives after the deadline', async () => {
    const clock = manualClock(0);
    let reject: (e: unknown) => void = () => {};
    const commands: string[] = [];
    const send: SendCommand = (args) => {
      commands.push(args[0] as string);
      return new Promise((_, rej) => {
        reject = rej;
      });
    };
    const store = new RedisStore({ sendCommand: send, timeoutMs: 10, timers: clock, clock });
    const p = store.consume('k', fixed, 1);
    clock.advance(10);
    await p;
    reject(new Error('NOSCRIPT No matching script.'));
    await new Promise((r) => setTimeout(r, 1));
    expect(commands).toEqual(['EVALSHA']);
    store.close();
  });
});

describe('RedisStore error policies', () => {
  it("'fallback': an in-memory store with the same rules decides, reason 'fallback'", async () => {
    const store = new RedisStore({ sendCommand: fake(refused('ECONNREFUSED')).send });
    expect(await store.consume('k', fixed, 1)).toEqual({
      allowed: true,
      reason: 'fallback',
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 1000,
      key: 'k',
    });
    expect(await store.consume('k', fixed, 1)).toMatchObject({
      allowed: true,
      reason: 'fallback',
      remaining: 0,
    });
    expect(await store.consume('k', fixed, 1)).toMatchObject({
      allowed: false,
      reason: 'fallback',
      remaining: 0,
    });
    expect(await store.peek('k', fixed)).toMatchObject({ allowed: false, reason: 'fallback' });
    const rule: FailureRule = { maxAttempts: 2, windowMs: 1000, lockoutMs: 5000 };
    expect(await store.recordFailure('f', rule)).toMatchObject({
      allowed: true,
      reason: 'fallback',
      remaining: 1,
    });
    expect(await store.recordFailure('f', rule)).toMatchObject({
      allowed: false,
      reason: 'fallback',
      lockoutStarted: true,
    });
    expect(await store.checkFailures('f', rule)).toMatchObject({
      allowed: false,
      reason: 'fallback',
      remaining: 0,
    });
    expect(await store.size()).toBe(2);
    await store.delete('f');
    expect(await store.checkFailures('f', rule)).toMatchObject({
      allowed: true,
      reason: 'fallback',
      remaining: 2,
    });
    store.close();
  });

  it("'open': allowed with reason 'store-error', nothing counted", async () => {
    const store = new RedisStore({
      sendCommand: fake(refused('ECONNREFUSED')).send,
      onError: 'open',
    });
    for (let i = 0; i < 5; i++) {
      expect(await store.consume('k', fixed, 1)).toEqual({
        allowed: true,
        reason: 'store-error',
        limit: 2,
        remaining: 2,
        retryAfterMs: 0,
        resetMs: 0,
        key: 'k',
      });
      expect(await store.recordFailure('f', failures)).toEqual({
        allowed: true,
        reason: 'store-error',
        limit: 3,
        remaining: 3,
        retryAfterMs: 0,
        resetMs: 0,
        key: 'f',
      });
    }
    store.close();
  });

  it("'closed': refused with reason 'store-error', never 'limited' or 'locked', nothing counted", async () => {
    const store = new RedisStore({
      sendCommand: fake(refused('ECONNREFUSED')).send,
      onError: 'closed',
      probeIntervalMs: 2000,
    });
    for (let i = 0; i < 5; i++) {
      expect(await store.consume('k', fixed, 1)).toEqual({
        allowed: false,
        reason: 'store-error',
        limit: 2,
        remaining: 0,
        retryAfterMs: 2000,
        resetMs: 2000,
        key: 'k',
      });
      expect(await store.checkFailures('f', failures)).toMatchObject({
        allowed: false,
        reason: 'store-error',
      });
    }
    store.close();
  });

  describe.each<OnError>(['fallback', 'open', 'closed'])(
    "a lockout seen in Redis keeps refusing when Redis fails ('%s')",
    (onError) => {
      let client: TestClient;
      beforeAll(async () => {
        client = await ioredis.connect();
      });
      afterAll(() => client?.close());

      it('refuses until the lockout ends, then follows the policy', async () => {
        const clock = manualClock(1_000_000);
        const prefix = uniquePrefix('lock');
        let down = false;
        const send: SendCommand = (args, key) =>
          down ? Promise.reject(new Error('connect ECONNREFUSED')) : client.sendCommand(args, key);
        const store = new RedisStore({ sendCommand: send, prefix, clock, onError });
        const rule: FailureRule = { maxAttempts: 2, windowMs: 1000, lockoutMs: 5000 };
        try {
          await store.recordFailure('ip', rule);
          expect(await store.recordFailure('ip', rule)).toMatchObject({
            reason: 'locked',
            lockoutStarted: true,
          });
          down = true;
          clock.advance(1000);
          expect(await store.checkFailures('ip', rule)).toEqual({
            allowed: false,
            reason: 'fallback',
            limit: 2,
            remaining: 0,
            retryAfterMs: 4000,
            resetMs: 4000,
            key: 'ip',
          });
          expect(await store.recordFailure('ip', rule)).toMatchObject({
            allowed: false,
            reason: 'fallback',
            retryAfterMs: 4000,
          });
          expect(store.degraded).toBe(true);
          clock.advance(4000);
          const after = await store.checkFailures('ip', rule);
          expect(after.reason).toBe(onError === 'fallback' ? 'fallback' : 'store-error');
          expect(after.allowed).toBe(onError !== 'closed');
        } finally {
          store.close();
          await deletePrefix(client.sendCommand, prefix);
        }
      });
    },
  );
});

describe('RedisStore outages', () => {
  it('logs and publishes once per outage, probes with PING, and recovers', async () => {
    const clock = manualClock(0);
    let down = true;
    const f = fake((args) => {
      if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
      return args[0] === 'PING' ? 'PONG' : [1, 1, 0, 1000, 0];
    });
    const log = memoryLogger();
    const events: PortcullisEvent[] = [];
    const onEvent = (message: unknown) => events.push(message as PortcullisEvent);
    subscribe('portcullis:store-error', onEvent);
    const store = new RedisStore({
      sendCommand: f.send,
      logger: log.logger,
      clock,
      probeIntervalMs: 1000,
    });
    try {
      for (let i = 0; i < 20; i++) await store.consume(`k${i}`, fixed, 1);
      expect(log.error).toHaveLength(1);
      expect(log.error[0]).toContain('ECONNREFUSED');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        limiter: 'RedisStore',
        decision: { reason: 'fallback', key: 'k0' },
      });
      expect(String(events[0]?.error)).toContain('ECONNREFUSED');
      // One failed call, then nothing is sent until the probe is due.
      expect(f.commands()).toEqual(['EVALSHA']);
      clock.advance(999);
      await store.consume('k', fixed, 1);
      expect(f.commands()).toEqual(['EVALSHA']);
      clock.advance(1);
      await store.consume('k', fixed, 1);
      await store.consume('k', fixed, 1);
      expect(f.commands()).toEqual(['EVALSHA', 'PING']);
      await new Promise((r) => setTimeout(r, 1));
      expect(store.degraded).toBe(true);
      down = false;
      clock.advance(1000);
      expect((await store.consume('k', fixed, 1)).reason).toBe('fallback');
      await new Promise((r) => setTimeout(r, 1));
      expect(store.degraded).toBe(false);
      expect(log.warn).toHaveLength(1);
      expect(log.warn[0]).toContain('answers again');
      expect(await store.consume('k', fixed, 1)).toMatchObject({ reason: 'allowed' });
      expect(f.commands()).toEqual(['EVALSHA', 'PING', 'PING', 'EVALSHA']);
      // A second outage is a new one: logged and published again, once.
      down = true;
      for (let i = 0; i < 5; i++) await store.consume('k', fixed, 1);
      expect(log.error).toHaveLength(2);
      expect(events).toHaveLength(2);
    } finally {
      unsubscribe('portcullis:store-error', onEvent);
      store.close();
    }
  });
});

describe('RedisStore with the core limiters (real Redis)', () => {
  let client: TestClient;
  const prefix = uniquePrefix('limiters');
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    await deletePrefix(client.sendCommand, prefix);
    await client?.close();
  });

  it('a failure limiter locks out through Redis and logs AUTH_RATE_LIMITED once', async () => {
    const log = memoryLogger();
    const store = new RedisStore({ sendCommand: client.sendCommand, prefix });
    const limiter = createFailureLimiter({ store, maxAttempts: 3, logger: log.logger });
    for (let i = 0; i < 2; i++)
      expect(await limiter.recordFailure('203.0.113.7', 'device-token')).toMatchObject({
        allowed: true,
      });
    expect(await limiter.recordFailure('203.0.113.7', 'device-token')).toMatchObject({
      allowed: false,
      reason: 'locked',
      key: '203.0.113.7',
    });
    expect(await limiter.check('203.0.113.7', 'device-token')).toMatchObject({
      allowed: false,
      reason: 'locked',
    });
    expect(await limiter.check('203.0.113.7', 'shared-secret')).toMatchObject({
      allowed: true,
      remaining: 3,
    });
    expect(log.warn.filter((m) => m.includes('AUTH_RATE_LIMITED'))).toHaveLength(1);
    const ttl = Number(
      await client.sendCommand(['PTTL', `${prefix}auth:device-token:203.0.113.7`], undefined),
    );
    expect(ttl).toBeGreaterThan(299_000);
    expect(ttl).toBeLessThanOrEqual(300_000);
    await limiter.recordSuccess('203.0.113.7', 'device-token');
    expect(await limiter.check('203.0.113.7', 'device-token')).toMatchObject({
      allowed: true,
      remaining: 3,
    });
    store.close();
  });

  it('a window limiter namespaces its keys; every key has a TTL; size() counts them', async () => {
    const own = uniquePrefix('size[*?]');
    const store = new RedisStore({ sendCommand: client.sendCommand, prefix: own });
    const limiter = createWindowLimiter({
      store,
      limit: 5,
      windowMs: 30_000,
      algorithm: 'sliding-window',
      name: 'api',
    });
    for (const k of ['a', 'b', 'c'])
      expect(await limiter.consume(k)).toMatchObject({ allowed: true, remaining: 4, key: k });
    expect(await store.size()).toBe(3);
    const keys = (await client.sendCommand(
      ['KEYS', `${own.replace(/[*?[\]]/g, '\\$&')}*`],
      undefined,
    )) as string[];
    expect(keys.sort()).toEqual([`${own}api:a`, `${own}api:b`, `${own}api:c`]);
    for (const k of keys) {
      const ttl = Number(await client.sendCommand(['PTTL', k], undefined));
      expect(ttl).toBeGreaterThan(59_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
      const state = decodeState(await client.getBuffer(k));
      // S expiresAt start prev curr: expires two windows after the start.
      expect(state?.kind).toBe('S');
      expect(state?.numbers[0]).toBe((state?.numbers[1] ?? 0) + 60_000);
      expect(state?.numbers.slice(2)).toEqual([0, 1]);
    }
    await limiter.reset('a');
    expect(await store.size()).toBe(2);
    await deletePrefix(client.sendCommand, own);
    store.close();
  });

  it('reads the Redis server clock, not the caller’s', async () => {
    const store = new RedisStore({ sendCommand: client.sendCommand, prefix });
    await store.consume('clock', fixed, 1);
    const state = decodeState(await client.getBuffer(`${prefix}clock`));
    const [seconds, micros] = (await client.sendCommand(['TIME'], undefined)) as [string, string];
    const serverNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const start = state?.numbers[1] ?? 0;
    expect(serverNow - start).toBeGreaterThanOrEqual(0);
    expect(serverNow - start).toBeLessThan(1000);
    store.close();
  });
});
