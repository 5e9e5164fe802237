// RedisStore's `durability` (a WAIT after a decision that starts a lockout or a ban) and the
// write-back of lockouts this process saw that Redis no longer holds (a promoted replica that
// missed them). The failover itself, with real replicas, is in test/redis-cluster/durability.test.ts.
import type { FailureRule, Logger, WindowRule } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeState,
  deletePrefix,
  delivered,
  ioredis,
  subscriber,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { RedisStore, type SendCommand } from './index.js';

const rule: FailureRule = { maxAttempts: 2, windowMs: 60_000, lockoutMs: 300_000 };
const fixed: WindowRule = { algorithm: 'fixed-window', limit: 5, windowMs: 1000 };
const send: SendCommand = () => Promise.resolve(null);

/** A logger that keeps each call's fields and message. */
function recorder() {
  const lines: { level: string; code: unknown; fields: Record<string, unknown>; msg: string }[] =
    [];
  const logger: Logger = {
    warn: (fields: object, msg?: string) =>
      lines.push({
        level: 'warn',
        code: (fields as { code?: unknown }).code,
        fields: fields as Record<string, unknown>,
        msg: msg ?? '',
      }),
    error: (fields: object, msg?: string) =>
      lines.push({
        level: 'error',
        code: (fields as { code?: unknown }).code,
        fields: fields as Record<string, unknown>,
        msg: msg ?? '',
      }),
  };
  return { logger, lines, codes: () => lines.map((l) => l.code) };
}

/**
 * A fake Redis for the failure script: `r` counts failures per key and locks at the rule's
 * maxAttempts; a ban (`b`) locks for its ms; a check answers the state; WAIT answers through
 * `wait` (a promise the test settles). Every command is recorded with its routing key.
 */
function fakeRedis(wait: (args: string[]) => Promise<unknown>) {
  const calls: { args: string[]; key: string | undefined }[] = [];
  const counts = new Map<string, number>();
  const sendCommand: SendCommand = (args, key) => {
    // The lockout index's bookkeeping follows a lockout, beside the decision: not recorded.
    if ((args[0] === 'EVALSHA' && args[4] === 'i') || String(args[1]).includes('~lockouts-slots'))
      return Promise.resolve(1);
    calls.push({ args, key });
    if (args[0] === 'WAIT') return wait(args);
    if (args[0] !== 'EVALSHA') return Promise.resolve(1);
    const redisKey = args[3] as string;
    const op = args[4];
    if (op === 'cf') return Promise.resolve([1, 4, 0, 1000, 0, 0]);
    if (op === 'b') return Promise.resolve([0, 0, Number(args[8]), Number(args[8]), 3]);
    const n = counts.get(redisKey) ?? 0;
    if (op === 'r') {
      counts.set(redisKey, n + 1);
      if (n + 1 === rule.maxAttempts) return Promise.resolve([0, 0, 300_000, 300_000, 1]);
      if (n + 1 > rule.maxAttempts) return Promise.resolve([0, 0, 300_000, 300_000, 0]);
      return Promise.resolve([1, rule.maxAttempts - n - 1, 0, 60_000, 0]);
    }
    if (n >= rule.maxAttempts) return Promise.resolve([0, 0, 300_000, 300_000, 0]);
    return Promise.resolve(n === 0 ? [1, 2, 0, 0, 0] : [1, 2 - n, 0, 60_000, 0]);
  };
  return { sendCommand, calls, commands: () => calls.map((c) => c.args[0]) };
}

const deferred = () => {
  let resolve: (value: unknown) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const promise = new Promise<unknown>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

/** Lets every settled promise run its continuations. */
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('RedisStore durability options', () => {
  it.each<[string, unknown, number | undefined, string, string]>([
    ['a string', 'yes', undefined, 'ERR_PORTCULLIS_DURABILITY', 'durability'],
    ['null', null, undefined, 'ERR_PORTCULLIS_DURABILITY', 'durability'],
    ['an array', [], undefined, 'ERR_PORTCULLIS_DURABILITY', 'durability'],
    ['replicas 0', { replicas: 0 }, undefined, 'ERR_PORTCULLIS_REPLICAS', 'durability.replicas'],
    [
      'replicas 1.5',
      { replicas: 1.5 },
      undefined,
      'ERR_PORTCULLIS_REPLICAS',
      'durability.replicas',
    ],
    [
      'replicas as a string',
      { replicas: '1' },
      undefined,
      'ERR_PORTCULLIS_REPLICAS',
      'durability.replicas',
    ],
    [
      'timeoutMs 0',
      { timeoutMs: 0 },
      undefined,
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'durability.timeoutMs',
    ],
    [
      'timeoutMs NaN',
      { timeoutMs: Number.NaN },
      undefined,
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'durability.timeoutMs',
    ],
    [
      'timeoutMs beyond the store timeoutMs',
      { timeoutMs: 1001 },
      1000,
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'durability.timeoutMs',
    ],
    [
      'timeoutMs beyond a short store timeoutMs',
      { timeoutMs: 50 },
      20,
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'durability.timeoutMs',
    ],
    [
      'an unknown name',
      { replica: 1 },
      undefined,
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
      'durability.replica',
    ],
  ])('durability %s: %s', (_, durability, timeoutMs, code, option) => {
    let error: unknown;
    try {
      new RedisStore({
        sendCommand: send,
        durability: durability as never,
        ...(timeoutMs !== undefined && { timeoutMs }),
      });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ name: 'PortcullisConfigError', code, option });
  });

  it.each<[string, unknown, number | undefined, unknown]>([
    ['absent', undefined, undefined, false],
    ['false', false, undefined, false],
    ['true', true, undefined, { replicas: 1, timeoutMs: 50 }],
    ['{}', {}, undefined, { replicas: 1, timeoutMs: 50 }],
    ['{} under a store timeoutMs of 20', {}, 20, { replicas: 1, timeoutMs: 20 }],
    ['both numbers', { replicas: 2, timeoutMs: 1000 }, 1000, { replicas: 2, timeoutMs: 1000 }],
  ])('durability %s', (_, durability, timeoutMs, expected) => {
    const store = new RedisStore({
      sendCommand: send,
      ...(durability !== undefined && { durability: durability as never }),
      ...(timeoutMs !== undefined && { timeoutMs }),
    });
    expect(store.durability).toEqual(expected);
    store.close();
  });
});

describe('RedisStore durability: WAIT after a lockout starts', () => {
  it('a lockout start waits for WAIT 1 50 on its key; the decision returns once WAIT answered', async () => {
    const clock = manualClock(0);
    const wait = deferred();
    const redis = fakeRedis(() => wait.promise);
    const store = new RedisStore({
      sendCommand: redis.sendCommand,
      prefix: 'p:',
      durability: {},
      clock,
      timers: clock,
    });
    expect(await store.recordFailure('ip', rule)).toMatchObject({ allowed: true, remaining: 1 });
    expect(redis.commands()).toEqual(['EVALSHA']);
    let decided: unknown;
    const started = store.recordFailure('ip', rule).then((d) => {
      decided = d;
    });
    await flush();
    expect(redis.calls[2]).toEqual({ args: ['WAIT', '1', '50'], key: 'p:ip' });
    expect(decided).toBeUndefined();
    wait.resolve(1);
    await started;
    expect(decided).toEqual({
      allowed: false,
      reason: 'locked',
      limit: 2,
      remaining: 0,
      retryAfterMs: 300_000,
      resetMs: 300_000,
      key: 'ip',
      lockoutStarted: true,
    });
    store.close();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('ordinary decisions never wait: allowed consumes, checks, a failure below the limit, a locked answer', async () => {
    const redis = fakeRedis(() => Promise.resolve(1));
    const store = new RedisStore({
      sendCommand: redis.sendCommand,
      durability: { replicas: 2, timeoutMs: 100 },
      localDeny: false,
    });
    await store.consume('w', fixed, 1);
    await store.checkFailures('ip', rule);
    await store.recordFailure('ip', rule);
    await store.recordSuccess('other', rule);
    expect(redis.commands()).toEqual(['EVALSHA', 'EVALSHA', 'EVALSHA', 'EVALSHA']);
    await store.recordFailure('ip', rule); // starts the lockout
    expect(redis.calls.at(-1)?.args).toEqual(['WAIT', '2', '100']);
    await store.recordFailure('ip', rule); // locked: written before, no WAIT
    await store.checkFailures('ip', rule);
    expect(redis.commands()).toEqual([
      'EVALSHA',
      'EVALSHA',
      'EVALSHA',
      'EVALSHA',
      'EVALSHA',
      'WAIT',
      'EVALSHA',
      'EVALSHA',
    ]);
    store.close();
  });

  it('a ban waits for WAIT on its key too', async () => {
    const redis = fakeRedis(() => Promise.resolve(1));
    const store = new RedisStore({
      sendCommand: redis.sendCommand,
      prefix: 'p:',
      durability: true,
    });
    expect(await store.ban('ip', rule, 90_000)).toMatchObject({
      allowed: false,
      reason: 'locked',
      retryAfterMs: 90_000,
    });
    expect(redis.calls).toEqual([
      {
        args: ['EVALSHA', expect.any(String), '1', 'p:ip', 'b', '2', '60000', '300000', '90000'],
        key: 'p:ip',
      },
      { args: ['WAIT', '1', '50'], key: 'p:ip' },
      // Other processes forget their shorter local lockout of the key (see redis-store.test.ts).
      { args: ['PUBLISH', 'p:deny-invalidations', '\u0001reopened:ip'], key: 'p:ip' },
    ]);
    store.close();
  });

  it('the WAIT gets what the script call left of timeoutMs, and the decision never waits longer', async () => {
    const clock = manualClock(0);
    const script = deferred();
    const calls: { args: string[]; key: string | undefined }[] = [];
    const sendCommand: SendCommand = (args, key) => {
      if ((args[0] === 'EVALSHA' && args[4] === 'i') || String(args[1]).includes('~lockouts'))
        return Promise.resolve(1);
      calls.push({ args, key });
      // The script answers when the test says; WAIT never answers.
      return args[0] === 'WAIT' ? new Promise(() => {}) : script.promise;
    };
    const log = recorder();
    const store = new RedisStore({
      sendCommand,
      timeoutMs: 200,
      durability: { timeoutMs: 50 },
      clock,
      timers: clock,
      logger: log.logger,
    });
    let decided: unknown;
    const started = store.recordFailure('ip', rule).then((d) => {
      decided = d;
    });
    clock.advance(170);
    script.resolve([0, 0, 300_000, 300_000, 1]);
    await flush();
    // 30 ms left of the store's 200: WAIT 1 30, raced against 30 ms.
    expect(calls[1]?.args).toEqual(['WAIT', '1', '30']);
    clock.advance(29);
    await flush();
    expect(decided).toBeUndefined();
    clock.advance(1);
    await started;
    expect(decided).toMatchObject({ allowed: false, reason: 'locked', lockoutStarted: true });
    // Not an outage: the decision came from Redis. Logged as a shortfall.
    expect(store.degraded).toBe(false);
    expect(log.codes()).toEqual(['PORTCULLIS_DURABILITY_SHORT']);
    expect(log.lines[0]?.msg).toBe(
      'RedisStore: WAIT after a lockout failed (Redis did not answer within 30ms); a failover now may lose lockouts. Until a WAIT reaches the replicas again, at most one is sent per 1000ms',
    );
    store.close();
  });

  it('fewer replicas: logged once per episode, at most one WAIT per probeIntervalMs, ended by a WAIT that reaches them', async () => {
    const clock = manualClock(0);
    let reached = 0;
    const redis = fakeRedis(() => Promise.resolve(reached));
    const log = recorder();
    const store = new RedisStore({
      sendCommand: redis.sendCommand,
      durability: { replicas: 1, timeoutMs: 50 },
      probeIntervalMs: 1000,
      clock,
      timers: clock,
      logger: log.logger,
      localDeny: false,
    });
    const lockOut = async (key: string) => {
      await store.recordFailure(key, rule);
      return store.recordFailure(key, rule);
    };
    const waits = () => redis.commands().filter((c) => c === 'WAIT').length;
    expect(await lockOut('a')).toMatchObject({ reason: 'locked', lockoutStarted: true });
    expect(waits()).toBe(1);
    expect(log.lines).toEqual([
      {
        level: 'warn',
        code: 'PORTCULLIS_DURABILITY_SHORT',
        fields: {
          code: 'PORTCULLIS_DURABILITY_SHORT',
          store: 'RedisStore',
          prefix: 'portcullis:',
          replicas: 1,
          reached: 0,
          timeoutMs: 50,
        },
        msg: 'RedisStore: WAIT after a lockout reached 0 of 1 replicas within 50ms; a failover now may lose lockouts. Until a WAIT reaches the replicas again, at most one is sent per 1000ms',
      },
    ]);
    // Within the episode's interval: no WAIT (it would hold the connection again), no new log.
    expect(await lockOut('b')).toMatchObject({ reason: 'locked', lockoutStarted: true });
    clock.advance(999);
    expect(await lockOut('c')).toMatchObject({ reason: 'locked', lockoutStarted: true });
    expect(waits()).toBe(1);
    clock.advance(1);
    expect(await lockOut('d')).toMatchObject({ reason: 'locked', lockoutStarted: true });
    expect(waits()).toBe(2);
    expect(log.lines).toHaveLength(1);
    clock.advance(1000);
    reached = 1;
    expect(await lockOut('e')).toMatchObject({ reason: 'locked', lockoutStarted: true });
    expect(waits()).toBe(3);
    expect(log.lines[1]).toEqual({
      level: 'warn',
      code: 'PORTCULLIS_DURABILITY_RESTORED',
      fields: {
        code: 'PORTCULLIS_DURABILITY_RESTORED',
        store: 'RedisStore',
        prefix: 'portcullis:',
        shortForMs: 2000,
        unconfirmed: 4,
      },
      msg: 'RedisStore: WAIT reaches the replicas again after 2000ms; 4 lockouts were not confirmed on a replica',
    });
    // Healthy again: every lockout start waits.
    expect(await lockOut('f')).toMatchObject({ lockoutStarted: true });
    expect(waits()).toBe(4);
    expect(log.lines).toHaveLength(2);
    store.close();
  });

  it('a WAIT that fails is a shortfall, not an error for the client nor an outage', async () => {
    const redis = fakeRedis(() =>
      Promise.reject(new Error('ERR WAIT cannot be used with replica instances')),
    );
    const log = recorder();
    const store = new RedisStore({
      sendCommand: redis.sendCommand,
      durability: true,
      logger: log.logger,
    });
    await store.recordFailure('ip', rule);
    expect(await store.recordFailure('ip', rule)).toMatchObject({
      allowed: false,
      reason: 'locked',
      lockoutStarted: true,
    });
    expect(store.degraded).toBe(false);
    expect(log.codes()).toEqual(['PORTCULLIS_DURABILITY_SHORT']);
    store.close();
  });
});

describe('RedisStore writes back lockouts Redis lost (real Redis)', () => {
  let client: TestClient;
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(() => client?.close());

  const locked = (key: string, ms: number) => ({
    allowed: false,
    reason: 'locked',
    limit: 2,
    remaining: 0,
    retryAfterMs: ms,
    resetMs: ms,
    key,
  });
  const lockOut = async (store: RedisStore, key: string) => {
    await store.recordFailure(key, rule);
    expect(await store.recordFailure(key, rule)).toMatchObject({ lockoutStarted: true });
  };
  /** Polls (≤ 1 s) until `key` holds a value in Redis, or is gone (`present` false). */
  const until = async (key: string, present = true) => {
    for (let i = 0; i < 200; i++) {
      if (((await client.getBuffer(key)) !== null) === present) return;
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  it('writeBackLockouts(): a lockout seen, lost by Redis, is written back with its time left; a fresh store sees it', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('wb-call');
    const store = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: () => () => {},
    });
    try {
      await lockOut(store, 'ip');
      clock.advance(10_000);
      // A promoted replica that never had it.
      await deletePrefix(client.sendCommand, prefix);
      store.writeBackLockouts();
      await until(`${prefix}ip`);
      expect(decodeState(await client.getBuffer(`${prefix}ip`))).toEqual({
        kind: 'L',
        numbers: [1_300_000, 1_300_000],
      });
      const fresh = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
      expect(await fresh.checkFailures('ip', rule)).toEqual(locked('ip', 290_000));
      fresh.close();
    } finally {
      store.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('a reply without the lockout this process saw writes it back (the deny table off or stale)', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('wb-reply');
    const store = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: () => () => {},
    });
    try {
      await lockOut(store, 'ip');
      await deletePrefix(client.sendCommand, prefix);
      clock.advance(1000); // the deny table's entry is stale: Redis is asked
      expect(await store.checkFailures('ip', rule)).toEqual(locked('ip', 299_000));
      await until(`${prefix}ip`);
      const fresh = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
      expect(await fresh.recordFailure('ip', rule)).toEqual(locked('ip', 299_000));
      fresh.close();
    } finally {
      store.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('after an outage every lockout seen in Redis is written back (Redis may be a promoted replica)', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('wb-outage');
    let down = false;
    const sendCommand: SendCommand = (args, key) =>
      down ? Promise.reject(new Error('connect ECONNREFUSED')) : client.sendCommand(args, key);
    const store = new RedisStore({
      sendCommand,
      prefix,
      clock,
      probeIntervalMs: 1000,
      subscribe: () => () => {},
    });
    try {
      await lockOut(store, 'ip');
      down = true;
      await deletePrefix(client.sendCommand, prefix);
      clock.advance(2000);
      expect(await store.checkFailures('ip', rule)).toEqual({
        ...locked('ip', 298_000),
        reason: 'fallback',
      });
      expect(store.degraded).toBe(true);
      clock.advance(1000);
      down = false;
      await store.checkFailures('other', rule); // the probe's PING goes out
      await until(`${prefix}ip`);
      expect(store.degraded).toBe(false);
      const fresh = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
      expect(await fresh.checkFailures('ip', rule)).toEqual(locked('ip', 297_000));
      fresh.close();
    } finally {
      store.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('an idle store whose write-back failed probes by itself every probeIntervalMs until Redis takes it', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('wb-idle');
    let down = false;
    const sendCommand: SendCommand = (args, key) =>
      down ? Promise.reject(new Error('connect ECONNREFUSED')) : client.sendCommand(args, key);
    const store = new RedisStore({
      sendCommand,
      prefix,
      clock,
      timers: clock,
      probeIntervalMs: 1000,
      subscribe: () => () => {},
    });
    try {
      await lockOut(store, 'ip');
      await deletePrefix(client.sendCommand, prefix);
      // The client reports a failover while the promoted replica is not there yet.
      down = true;
      store.writeBackLockouts();
      for (let i = 0; i < 100 && !store.degraded; i++) await new Promise((r) => setTimeout(r, 1));
      expect(store.degraded).toBe(true);
      clock.advance(999);
      down = false;
      await new Promise((r) => setTimeout(r, 20));
      // No decision comes, and the probe is not due yet: nothing was written.
      expect(await client.getBuffer(`${prefix}ip`)).toBeNull();
      clock.advance(1);
      await until(`${prefix}ip`);
      expect(store.degraded).toBe(false);
      expect(decodeState(await client.getBuffer(`${prefix}ip`))).toEqual({
        kind: 'L',
        numbers: [1_300_000, 1_300_000],
      });
    } finally {
      store.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('without subscribe a lockout seen in Redis is never written back (a reset elsewhere would not reach this process)', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('wb-nosub');
    const store = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
    try {
      await lockOut(store, 'ip');
      await deletePrefix(client.sendCommand, prefix);
      store.writeBackLockouts();
      clock.advance(1000);
      // Still refused here, from the table of lockouts seen…
      expect(await store.checkFailures('ip', rule)).toEqual(locked('ip', 299_000));
      await new Promise((r) => setTimeout(r, 20));
      // …but nothing was written.
      expect(await client.getBuffer(`${prefix}ip`)).toBeNull();
    } finally {
      store.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('a reset heard through subscribe wins: the lockout it lifted is not written back', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('wb-reset');
    const sub = await subscriber();
    const store = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: sub.subscribe,
    });
    const admin = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
    try {
      await sub.ready();
      await lockOut(store, 'reset');
      await lockOut(store, 'kept');
      // Redis loses both (a failover), then an operator lifts one of them elsewhere.
      await deletePrefix(client.sendCommand, prefix);
      await admin.delete('reset');
      await delivered(sub);
      store.writeBackLockouts();
      await until(`${prefix}kept`);
      await new Promise((r) => setTimeout(r, 20));
      expect(await client.getBuffer(`${prefix}reset`)).toBeNull();
      expect(await admin.checkFailures('reset', rule)).toMatchObject({
        allowed: true,
        remaining: 2,
      });
      expect(await store.checkFailures('reset', rule)).toMatchObject({
        allowed: true,
        remaining: 2,
      });
      expect(await admin.checkFailures('kept', rule)).toEqual(locked('kept', 300_000));
    } finally {
      store.close();
      admin.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });

  it('a reset that lands before a write-back but is heard after it is made again here: the reset wins', async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('wb-race');
    let onMessage: (message: string) => void = () => {};
    const store = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      // Messages are handed over when the test says: this one arrives late.
      subscribe: (_, deliver) => {
        onMessage = deliver;
        return () => {};
      },
    });
    const admin = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
    try {
      await lockOut(store, 'ip');
      await deletePrefix(client.sendCommand, prefix);
      await admin.delete('ip'); // DEL and PUBLISH: the message is on its way
      store.writeBackLockouts(); // this process has not heard of the reset yet
      await until(`${prefix}ip`);
      onMessage('ip');
      await until(`${prefix}ip`, false);
      expect(await client.getBuffer(`${prefix}ip`)).toBeNull();
      expect(await admin.checkFailures('ip', rule)).toMatchObject({ allowed: true, remaining: 2 });
      expect(await store.checkFailures('ip', rule)).toMatchObject({ allowed: true, remaining: 2 });
    } finally {
      store.close();
      admin.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  });
});
