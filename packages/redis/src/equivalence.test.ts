/*
 * Property test: random sequences of every operation, over random rules and random clock steps
 * (biased to window and lockout boundaries, and stepping back too, as wall clocks do), give
 * identical decisions from the Lua script in a real Redis and from core's MemoryStore. Keys are
 * shared between algorithms on purpose, so a key that changes kind is covered too. Refunds are
 * mostly aimed at the instants of earlier consumes (± 1 ms: the windows' edges), else at random
 * ages, and a peek after one may compare the state they left. Every decision also keeps the bounds
 * a clock step must not break (no wait beyond lockoutMs or the window's span), and waiting the
 * advertised retryAfterMs is enough, on both stores.
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
  | {
      t: 'refund';
      key: string;
      rule: number;
      cost: number;
      ago: number;
      /** Measure `ago` from the n-th latest consume of the key (± 1 ms), not from now. */
      since: { n: number; delta: number } | null;
      check: boolean;
    }
  | { t: 'check'; key: string; frule: number; wait: boolean }
  | { t: 'record'; key: string; frule: number }
  | { t: 'success'; key: string; frule: number }
  | { t: 'delete'; key: string }
  | { t: 'advance'; ms: number }
  | { t: 'rewind'; ms: number };

// The first property uses one rule per algorithm per run: a key may change algorithm, but never
// meets two rules of the same algorithm (limiters keep one rule per name, and the name is in the
// key). The second gives each algorithm and the failure log two rules, as a limiter reconfigured
// live (`reconfigure`) does.
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
      rule: fc.nat(5),
      cost: fc.integer({ min: 1, max: 14 }),
      wait: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('peek' as const),
      key,
      rule: fc.nat(5),
      wait: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('refund' as const),
      key,
      rule: fc.nat(5),
      cost: fc.integer({ min: 1, max: 14 }),
      ago: fc.oneof(
        fc.integer({ min: 0, max: 6000 }),
        fc.constantFrom(0, 1, 999, 1000, 1001, 2000, 60_000),
      ),
      since: fc.option(fc.record({ n: fc.nat(3), delta: fc.integer({ min: -1, max: 1 }) })),
      check: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('check' as const),
      key,
      frule: fc.nat(1),
      wait: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ t: fc.constant('record' as const), key, frule: fc.nat(1) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('success' as const), key, frule: fc.nat(1) }),
  },
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

  /** Runs `ops` on both stores; `rules[i % n]` and `frules[i % n]` pick the rule of each call. */
  async function run(rules: WindowRule[], frules: FailureRule[], ops: Op[]): Promise<void> {
    const clock = manualClock(1_700_000_000_000);
    const prefix = uniquePrefix('equiv');
    // No background sweep: when garbage is collected is no part of a decision, and Redis, whose
    // keys live at least 60 s of real time in this mode, never collects during a run. (A sweep
    // firing in virtual time would forget a dead key that a clock step back could otherwise
    // revive in Redis: clamped, within bounds, but different.)
    const memory = new MemoryStore({ clock, timers: clock, sweepIntervalMs: 2 ** 31 - 1 });
    const redis = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      onError: 'closed',
    });
    const windowRuleOf = (i: number) => rules[i % rules.length] as WindowRule;
    const failureRuleOf = (i: number) => frules[i % frules.length] as FailureRule;
    // When each key's calls were made, latest first: refunds are aimed at them and their edges.
    const consumed = new Map<string, number[]>();
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
            const rule = windowRuleOf(o.rule);
            const d = memory.consume(o.key, rule, o.cost);
            expect(await redis.consume(o.key, rule, o.cost)).toEqual(d);
            windowBounded(d, rule);
            consumed.set(o.key, [clock.now(), ...(consumed.get(o.key) ?? [])]);
            if (!d.allowed && o.wait && o.cost <= rule.limit) {
              clock.advance(d.retryAfterMs);
              const after = memory.consume(o.key, rule, o.cost);
              expect(await redis.consume(o.key, rule, o.cost)).toEqual(after);
              expect(after.allowed).toBe(true);
            }
            break;
          }
          case 'peek': {
            const rule = windowRuleOf(o.rule);
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
          case 'refund': {
            const rule = windowRuleOf(o.rule);
            const at = o.since ? consumed.get(o.key)?.[o.since.n] : undefined;
            const ago =
              o.since && at !== undefined ? Math.max(0, clock.now() - at + o.since.delta) : o.ago;
            memory.refund(o.key, rule, o.cost, ago);
            await redis.refund(o.key, rule, o.cost, ago);
            expect(redis.degraded).toBe(false);
            if (o.check) {
              const d = memory.peek(o.key, rule);
              expect(await redis.peek(o.key, rule)).toEqual(d);
              windowBounded(d, rule);
            }
            break;
          }
          case 'check': {
            const frule = failureRuleOf(o.frule);
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
            const frule = failureRuleOf(o.frule);
            const d = memory.recordFailure(o.key, frule);
            expect(await redis.recordFailure(o.key, frule)).toEqual(d);
            failureBounded(d, frule);
            break;
          }
          case 'success': {
            const frule = failureRuleOf(o.frule);
            const d = memory.recordSuccess(o.key, frule);
            expect(await redis.recordSuccess(o.key, frule)).toEqual(d);
            failureBounded(d, frule);
            break;
          }
          case 'delete':
            await redis.delete(o.key);
            memory.delete(o.key);
            consumed.delete(o.key);
            break;
        }
      }
    } finally {
      redis.close();
      memory.close();
      await deletePrefix(client.sendCommand, prefix);
    }
  }

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
        (rules, frule, ops) => run(rules, [frule], ops),
      ),
      { numRuns: Number(process.env.EQUIV_RUNS ?? 300) },
    );
  });

  it('every decision is identical when a key meets a second rule of its kind (reconfigure)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(
          windowRule('fixed-window'),
          windowRule('sliding-window'),
          windowRule('token-bucket'),
          windowRule('fixed-window'),
          windowRule('sliding-window'),
          windowRule('token-bucket'),
        ),
        fc.tuple(failureRule, failureRule),
        fc.array(op, { minLength: 1, maxLength: 40 }),
        (rules, frules, ops) => run(rules, frules, ops),
      ),
      { numRuns: Number(process.env.EQUIV_RUNS ?? 300) },
    );
  });
});
