/*
 * Property test: random sequences of every operation, over random rules and random clock steps
 * (biased to window and lockout boundaries, and stepping back too, as wall clocks do), give
 * identical decisions from the Lua script in a real Redis and from core's MemoryStore. Keys are
 * shared between algorithms on purpose, so a key that changes kind is covered too. Every decision
 * also keeps the bounds a clock step must not break (no wait beyond lockoutMs or the window's
 * span), and waiting the advertised retryAfterMs is enough, on both stores.
 */
import { type Decision, type FailureRule, MemoryStore, type WindowRule } from '@portcullis/core';
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
  | { t: 'consume'; key: string; rule: number; cost: number; wait: boolean }
  | { t: 'peek'; key: string; rule: number; wait: boolean }
  | { t: 'check'; key: string; wait: boolean }
  | { t: 'record'; key: string }
  | { t: 'success'; key: string }
  | { t: 'delete'; key: string }
  | { t: 'advance'; ms: number }
  | { t: 'rewind'; ms: number };

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
      wait: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('peek' as const),
      key,
      rule: fc.nat(2),
      wait: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('check' as const), key, wait: fc.boolean() }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('record' as const), key }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('success' as const), key }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), key }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('rewind' as const),
      ms: fc.oneof(fc.integer({ min: 1, max: 6000 }), fc.constantFrom(1, 1000, 3_600_000)),
    }),
  },
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

/** The longest wait a window rule can advertise: one window; two for the sliding window. */
const span = (rule: WindowRule) =>
  rule.algorithm === 'sliding-window' ? 2 * rule.windowMs : rule.windowMs;

function windowBounded(d: Decision, rule: WindowRule): void {
  expect(d.retryAfterMs).toBeGreaterThanOrEqual(d.allowed ? 0 : 1);
  expect(d.retryAfterMs).toBeLessThanOrEqual(d.allowed ? 0 : span(rule));
  expect(d.resetMs).toBeGreaterThanOrEqual(0);
  expect(d.resetMs).toBeLessThanOrEqual(span(rule));
  expect(d.remaining).toBeGreaterThanOrEqual(0);
  expect(d.remaining).toBeLessThanOrEqual(rule.limit);
}

function failureBounded(d: Decision, rule: FailureRule): void {
  if (d.allowed) {
    expect(d.retryAfterMs).toBe(0);
    expect(d.resetMs).toBeLessThanOrEqual(rule.windowMs);
  } else {
    expect(d.retryAfterMs).toBeGreaterThanOrEqual(1);
    expect(d.retryAfterMs).toBeLessThanOrEqual(rule.lockoutMs);
    expect(d.resetMs).toBe(d.retryAfterMs);
  }
}

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
                case 'rewind':
                  clock.set(clock.now() - o.ms);
                  break;
                case 'consume': {
                  const rule = rules[o.rule] as WindowRule;
                  const d = memory.consume(o.key, rule, o.cost);
                  expect(await redis.consume(o.key, rule, o.cost)).toEqual(d);
                  windowBounded(d, rule);
                  if (!d.allowed && o.wait && o.cost <= rule.limit) {
                    clock.advance(d.retryAfterMs);
                    const after = memory.consume(o.key, rule, o.cost);
                    expect(await redis.consume(o.key, rule, o.cost)).toEqual(after);
                    expect(after.allowed).toBe(true);
                  }
                  break;
                }
                case 'peek': {
                  const rule = rules[o.rule] as WindowRule;
                  const d = memory.peek(o.key, rule);
                  expect(await redis.peek(o.key, rule)).toEqual(d);
                  windowBounded(d, rule);
                  if (!d.allowed && o.wait) {
                    clock.advance(d.retryAfterMs);
                    const after = memory.consume(o.key, rule, 1);
                    expect(await redis.consume(o.key, rule, 1)).toEqual(after);
                    expect(after.allowed).toBe(true);
                  }
                  break;
                }
                case 'check': {
                  const d = memory.checkFailures(o.key, frule);
                  expect(await redis.checkFailures(o.key, frule)).toEqual(d);
                  failureBounded(d, frule);
                  if (!d.allowed && o.wait) {
                    clock.advance(d.retryAfterMs);
                    const after = memory.checkFailures(o.key, frule);
                    expect(await redis.checkFailures(o.key, frule)).toEqual(after);
                    expect(after).toMatchObject({ allowed: true, remaining: frule.maxAttempts });
                  }
                  break;
                }
                case 'record': {
                  const d = memory.recordFailure(o.key, frule);
                  expect(await redis.recordFailure(o.key, frule)).toEqual(d);
                  failureBounded(d, frule);
                  break;
                }
                case 'success': {
                  const d = memory.recordSuccess(o.key, frule);
                  expect(await redis.recordSuccess(o.key, frule)).toEqual(d);
                  failureBounded(d, frule);
                  break;
                }
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
