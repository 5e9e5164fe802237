// A reset is a reset: a check whose reply is still on its way when the lockout is lifted must not
// teach the process that the client is locked out. Seen before the fix: the late reply put the
// lockout back in the process's memory, and the client was refused for the full 300 s although
// Redis held nothing. In the same process, and across processes through `subscribe`.
import { createFailureLimiter, type FailureLimiter } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import {
  delivered,
  deletePrefix,
  holding,
  ioredis,
  subscriber,
  type TestClient,
  uniquePrefix,
} from './helpers.js';

const T0 = 1_700_000_000_000;
const ip = '198.51.100.77';

describe('a reset racing an in-flight check is not undone by its late reply', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const prefix of prefixes) await deletePrefix(client.sendCommand, prefix);
    await client?.close();
  });

  const limiter = (store: RedisStore): FailureLimiter =>
    createFailureLimiter({ maxAttempts: 3, store, name: 'auth' });

  it.each([true, false])('in one process (localDeny %s)', async (localDeny) => {
    const prefix = uniquePrefix('reset-race');
    prefixes.push(prefix);
    const clock = manualClock(T0);
    const wire = holding(client.sendCommand);
    const store = new RedisStore({ sendCommand: wire.send, prefix, clock, localDeny });
    const auth = limiter(store);
    // Another process locked the client out: this one has not seen the lockout, so its check asks
    // Redis.
    const other = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
    for (let i = 0; i < 3; i++) await limiter(other).recordFailure(ip);
    other.close();
    // A check goes out and Redis answers "locked"; the answer is held on its way back.
    wire.hold();
    const late = auth.check(ip);
    await new Promise((r) => setImmediate(r));
    await auth.reset(ip);
    wire.release();
    expect(await late).toMatchObject({ allowed: false, reason: 'locked', retryAfterMs: 300_000 });
    // Redis holds nothing, and neither does this process: the client gets every attempt.
    expect(await client.sendCommand(['EXISTS', `${prefix}auth:default:${ip}`], undefined)).toBe(0);
    expect(await auth.check(ip)).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 3,
      remaining: 3,
      retryAfterMs: 0,
      resetMs: 0,
      key: ip,
    });
    expect(await auth.recordFailure(ip)).toMatchObject({ allowed: true, remaining: 2 });
    store.close();
  });

  it('across processes: the reset made elsewhere reaches the one whose check was in flight', async () => {
    const prefix = uniquePrefix('reset-race');
    prefixes.push(prefix);
    const clock = manualClock(T0);
    const mine = await subscriber();
    const theirs = await subscriber();
    const subs = [mine, theirs];
    const wire = holding(client.sendCommand);
    const here = new RedisStore({
      sendCommand: wire.send,
      prefix,
      clock,
      subscribe: mine.subscribe,
    });
    const there = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: theirs.subscribe,
    });
    for (const sub of subs) await sub.ready();
    const a = limiter(here);
    const b = limiter(there);
    // The client guessed through the other process; this one has not seen the lockout.
    for (let i = 0; i < 3; i++) await b.recordFailure(ip);
    wire.hold();
    const late = a.check(ip);
    await new Promise((r) => setImmediate(r));
    // The operator unlocks the client through the other process.
    await b.reset(ip);
    await delivered(mine);
    wire.release();
    expect(await late).toMatchObject({ allowed: false, reason: 'locked' });
    expect(await a.check(ip)).toMatchObject({ allowed: true, reason: 'allowed', remaining: 3 });
    expect(await b.check(ip)).toMatchObject({ allowed: true, reason: 'allowed', remaining: 3 });
    here.close();
    there.close();
  });
});
