// Counts survive a change of the rules on Redis. Seen before the fix: a window limiter widened from
// 1 s to 60 s still lost its count when the old second was over (the stored expiry, and the key's
// TTL, were the old rule's), and a failure limiter widened from 60 s to 600 s during a brute force
// restarted the attacker's count at 60 s. reconfigure() now re-stamps the limiter's keys in Redis.
import { createFailureLimiter, createWindowLimiter } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import { deletePrefix, ioredis, type TestClient, uniquePrefix } from './helpers.js';

const T0 = 1_700_000_000_000;

describe('reconfigure keeps live counts on Redis', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const prefix of prefixes) await deletePrefix(client.sendCommand, prefix);
    await client?.close();
  });

  function store(clock: ReturnType<typeof manualClock>, localDeny = true) {
    const prefix = uniquePrefix('reconfigure');
    prefixes.push(prefix);
    return {
      prefix,
      store: new RedisStore({ sendCommand: client.sendCommand, prefix, clock, localDeny }),
    };
  }

  it.each([
    ['fixed-window', 60_000],
    ['sliding-window', 120_000],
  ] as const)(
    '%s widened from 1 s to 60 s: the count outlives the old end, in the value and its TTL',
    async (algorithm, span) => {
      const clock = manualClock(T0);
      const { prefix, store: s } = store(clock);
      const limiter = createWindowLimiter({
        algorithm,
        limit: 5,
        windowMs: 1000,
        store: s,
        name: 'api',
      });
      await limiter.consume('k');
      await limiter.consume('k');
      clock.advance(500);
      limiter.reconfigure({ windowMs: 60_000 });
      expect(await limiter.peek('k')).toMatchObject({
        allowed: true,
        remaining: 3,
        resetMs: span - 500,
      });
      clock.advance(1000);
      expect(await limiter.peek('k')).toMatchObject({
        allowed: true,
        remaining: 3,
        resetMs: span - 1500,
      });
      // The key lives in Redis as long as the new rule needs it, not the old second.
      const ttl = Number(await client.sendCommand(['PTTL', `${prefix}api:k`], `${prefix}api:k`));
      expect(ttl).toBeGreaterThan(span - 2000);
      expect(ttl).toBeLessThanOrEqual(span);
      s.close();
    },
  );

  it.each([true, false])(
    'a failure limiter widened during a brute force keeps the count (localDeny %s)',
    async (localDeny) => {
      const clock = manualClock(T0);
      const { store: s } = store(clock, localDeny);
      const auth = createFailureLimiter({ maxAttempts: 5, store: s });
      for (let i = 0; i < 4; i++) await auth.recordFailure('203.0.113.9');
      clock.advance(30_000);
      auth.reconfigure({ windowMs: 600_000 });
      clock.advance(35_000);
      expect(await auth.check('203.0.113.9')).toMatchObject({ allowed: true, remaining: 1 });
      expect(await auth.recordFailure('203.0.113.9')).toMatchObject({
        allowed: false,
        reason: 'locked',
        retryAfterMs: 300_000,
      });
      s.close();
    },
  );

  it('a failure that had expired when the window widened never counts again, as in memory', async () => {
    const clock = manualClock(T0);
    const { store: s } = store(clock);
    const auth = createFailureLimiter({ maxAttempts: 3, store: s });
    await auth.recordFailure('203.0.113.10');
    clock.advance(50_000);
    await auth.recordFailure('203.0.113.10');
    clock.advance(20_000);
    auth.reconfigure({ windowMs: 600_000 });
    expect(await auth.check('203.0.113.10')).toMatchObject({ remaining: 2, resetMs: 580_000 });
    s.close();
  });

  it('a narrowed window ends at once what is over under the new rule, and the reconfigure resolves nothing late', async () => {
    const clock = manualClock(T0);
    const { store: s } = store(clock);
    const limiter = createWindowLimiter({ limit: 2, windowMs: 60_000, store: s, name: 'narrow' });
    await limiter.consume('k');
    await limiter.consume('k');
    clock.advance(5000);
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 55_000 });
    limiter.reconfigure({ windowMs: 1000 });
    expect(await limiter.consume('k')).toMatchObject({
      allowed: true,
      remaining: 1,
      resetMs: 1000,
    });
    s.close();
  });
});
