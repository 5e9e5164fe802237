/*
 * Property test: random sequences of every operation, over random rules and random clock steps
 * (biased to window and lockout boundaries), give identical decisions from the Lua script in a
 * real Redis and from core's MemoryStore. Keys are shared between algorithms on purpose, so a key
 * that changes kind is covered too.
 */
import { type FailureRule, MemoryStore, type WindowRule } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deletePrefix,
  ioredis,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { RedisStore } from './index.js';

type Op =
  | { t: 'consume'; key: string; rule: number; cost: number }
  | { t: 'peek'; key: string; rule: number }
  | { t: 'check'; key: string }
  | { t: 'record'; key: string }
  | { t: 'delete'; key: string }
  | { t: 'advance'; ms: number };

// One rule per algorithm per run: a key may change algorithm, but a key never sees two rules of the
// same algorithm (limiters keep one rule per name, and the name is in the key).
const windowRule = (algorithm: WindowRule['algorithm']) =>
  fc.record({
    algorithm: fc.constant(algorithm),
    limit: fc.integer({ min: 1, max: 12 }),
    windowMs: fc.oneof(fc.integer({ min: 1, max: 5000 }), fc.constantFrom(1000, 60_000, 7)),
  });

const failureRule = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 6 }),
  windowMs: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.constant(1000)),
  lockoutMs: fc.integer({ min: 1, max: 6000 }),
});

const key = fc.constantFrom('a', 'b', 'c');

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('consume' as const),
      key,
      rule: fc.nat(2),
      cost: fc.integer({ min: 1, max: 14 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('peek' as const), key, rule: fc.nat(2) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('check' as const), key }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('record' as const), key }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), key }) },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('advance' as const),
      ms: fc.oneof(
        fc.integer({ min: 0, max: 3000 }),
        fc.constantFrom(0, 1, 999, 1000, 1001, 2000, 5000, 60_000),
      ),
    }),
  },
);

describe('RedisStore ≡ MemoryStore on random operation sequences', () => {
  let client: TestClient;
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(() => client?.close());

  it('every decision is identical, field for field', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(
          windowRule('fixed-window'),
          windowRule('sliding-window'),
          windowRule('token-bucket'),
        ),
        failureRule,
        fc.array(op, { minLength: 1, maxLength: 40 }),
        async (rules: [WindowRule, WindowRule, WindowRule], frule: FailureRule, ops: Op[]) => {
          const clock = manualClock(1_700_000_000_000);
          const prefix = uniquePrefix('equiv');
          const memory = new MemoryStore({ clock, timers: clock });
          const redis = new RedisStore({
            sendCommand: client.sendCommand,
            prefix,
            clock,
            onError: 'closed',
          });
          try {
            for (const o of ops) {
              switch (o.t) {
                case 'advance':
                  clock.advance(o.ms);
                  break;
                case 'consume': {
                  const rule = rules[o.rule] as WindowRule;
                  expect(await redis.consume(o.key, rule, o.cost)).toEqual(
                    memory.consume(o.key, rule, o.cost),
                  );
                  break;
                }
                case 'peek': {
                  const rule = rules[o.rule] as WindowRule;
                  expect(await redis.peek(o.key, rule)).toEqual(memory.peek(o.key, rule));
                  break;
                }
                case 'check':
                  expect(await redis.checkFailures(o.key, frule)).toEqual(
                    memory.checkFailures(o.key, frule),
                  );
                  break;
                case 'record':
                  expect(await redis.recordFailure(o.key, frule)).toEqual(
                    memory.recordFailure(o.key, frule),
                  );
                  break;
                case 'delete':
                  await redis.delete(o.key);
                  memory.delete(o.key);
                  break;
              }
            }
          } finally {
            redis.close();
            memory.close();
            await deletePrefix(client.sendCommand, prefix);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
