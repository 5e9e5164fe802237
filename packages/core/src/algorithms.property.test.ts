/*
 * Property tests: random operation sequences and random clock steps drive each algorithm through a
 * limiter and the memory store, and the decisions are checked against small reference models kept
 * as plain logs of what happened (a different representation from the stores' counters; a refund
 * is a negative entry in the window it gives back to), and against the promises a decision makes
 * (retry after `retryAfterMs` and you pass; `remaining` more unit calls pass right now).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Decision } from './decision.js';
import { createFailureLimiter } from './failure-limiter.js';
import { MemoryStore } from './memory-store.js';
import type { Algorithm, WindowRule } from './store.js';
import { manualClock } from './testing/manual-clock.js';
import { createWindowLimiter } from './window-limiter.js';

type Op =
  | { t: 'consume'; key: string; cost: number }
  | { t: 'peek'; key: string }
  | {
      t: 'refund';
      key: string;
      cost: number;
      ago: number;
      /** Measure `ago` from the n-th latest call of the key (± 1 ms): a window's edge. */
      aim: { n: number; delta: number } | null;
    }
  | { t: 'advance'; ms: number }
  | { t: 'reset'; key: string };

/**
 * The value of a memory-store call, which answers synchronously (the models below run inside
 * fast-check's synchronous properties); a promise here is a change the test must report.
 */
function settled<T>(value: T | Promise<T>): T {
  if (value instanceof Promise) throw new Error('the memory store answered with a promise');
  return value;
}

/** Clock steps biased towards the boundaries that matter (exact window and lockout lengths). */
const step = (max: number) =>
  fc.oneof(
    fc.integer({ min: 0, max }),
    fc.constantFrom(0, 1, 250, 500, 999, 1000, 1001, 2000, 3000),
  );

const opArb = (maxCost: number, maxStep: number) =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        t: fc.constant('consume' as const),
        key: fc.constantFrom('a', 'b'),
        cost: fc.integer({ min: 1, max: maxCost }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ t: fc.constant('peek' as const), key: fc.constantFrom('a', 'b') }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('refund' as const),
        key: fc.constantFrom('a', 'b'),
        cost: fc.integer({ min: 1, max: maxCost }),
        ago: step(2 * maxStep),
        aim: fc.option(fc.record({ n: fc.nat(3), delta: fc.integer({ min: -1, max: 1 }) })),
      }),
    },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: step(maxStep) }) },
    {
      weight: 1,
      arbitrary: fc.record({ t: fc.constant('reset' as const), key: fc.constantFrom('a', 'b') }),
    },
  );

/** Reference models over a log of accepted calls and refunds: [time, cost][]. */
interface Model {
  decide(
    log: [number, number][],
    now: number,
    cost: number,
    anchor: { start?: number },
  ): { allowed: boolean; remaining: number };
  /** Gives back `cost` units spent `ago` ms ago: a negative entry in the window they count in. */
  refund(
    log: [number, number][],
    now: number,
    cost: number,
    ago: number,
    anchor: { start?: number },
  ): void;
}

const sum = (log: [number, number][], from: number, to = Number.POSITIVE_INFINITY) =>
  log.filter(([t]) => t >= from && t < to).reduce((s, [, c]) => s + c, 0);

const fixedModel = (limit: number, w: number): Model => ({
  refund(log, now, cost, ago, anchor) {
    // Only the window in force, and only when it had started when the units were spent.
    if (anchor.start === undefined || now >= anchor.start + w || now - anchor.start < ago) return;
    const back = Math.min(cost, sum(log, anchor.start));
    if (back > 0) log.push([now, -back]);
  },
  decide(log, now, cost, anchor) {
    if (anchor.start === undefined || now >= anchor.start + w) anchor.start = now;
    const start = anchor.start;
    const used = log.filter(([t]) => t >= start).reduce((s, [, c]) => s + c, 0);
    return {
      allowed: used + cost <= limit,
      remaining: limit - used - (used + cost <= limit ? cost : 0),
    };
  },
});

const slidingModel = (limit: number, w: number): Model => ({
  refund(log, now, cost, ago, anchor) {
    // Nothing left to give back to once both windows have passed.
    if (anchor.start === undefined || now >= anchor.start + 2 * w) return;
    if (now >= anchor.start + w) anchor.start += w;
    const start = anchor.start;
    if (now - start >= ago) {
      const back = Math.min(cost, sum(log, start));
      if (back > 0) log.push([now, -back]);
    } else if (now - start + w >= ago) {
      const back = Math.min(cost, sum(log, start - w, start));
      if (back > 0) log.push([start - w, -back]);
    }
  },
  decide(log, now, cost, anchor) {
    if (anchor.start === undefined || now >= anchor.start + 2 * w) anchor.start = now;
    if (now >= anchor.start + w) anchor.start += w;
    const start = anchor.start;
    const curr = log.filter(([t]) => t >= start).reduce((s, [, c]) => s + c, 0);
    const prev = log.filter(([t]) => t >= start - w && t < start).reduce((s, [, c]) => s + c, 0);
    const weighted = prev * (w - (now - start)) + curr * w;
    const allowed = weighted + cost * w <= limit * w;
    const after = weighted + (allowed ? cost * w : 0);
    return { allowed, remaining: Math.max(0, Math.floor((limit * w - after) / w)) };
  },
});

function runWindow(
  algorithm: Algorithm,
  limit: number,
  w: number,
  model: Model | undefined,
  ops: Op[],
): void {
  const clock = manualClock(0);
  const limiter = createWindowLimiter({ algorithm, limit, windowMs: w, clock, timers: clock });
  const logs: Record<string, [number, number][]> = { a: [], b: [] };
  const anchors: Record<string, { start?: number }> = { a: {}, b: {} };
  /** When each key's accepted calls were made, latest first. */
  const calls: Record<string, number[]> = { a: [], b: [] };
  /** When a bucket last changed (a consume, allowed or not, or a refund). */
  const touched: Record<string, number> = {};
  for (const op of ops) {
    if (op.t === 'advance') {
      clock.advance(op.ms);
      continue;
    }
    if (op.t === 'reset') {
      settled(limiter.reset(op.key));
      delete touched[op.key];
      logs[op.key] = [];
      anchors[op.key] = {};
      calls[op.key] = [];
      continue;
    }
    const now = clock.now();
    if (op.t === 'peek') {
      const before = limiter.peek(op.key) as Decision;
      expect(limiter.peek(op.key)).toEqual(before);
      continue;
    }
    if (op.t === 'refund') {
      const before = limiter.peek(op.key) as Decision;
      const at = op.aim ? calls[op.key]?.[op.aim.n] : undefined;
      const ago = op.aim && at !== undefined ? Math.max(0, now - at + op.aim.delta) : op.ago;
      settled(limiter.refund(op.key, op.cost, ago));
      const after = limiter.peek(op.key) as Decision;
      // A refund only ever gives back, and never beyond the limit.
      expect(after.remaining).toBeGreaterThanOrEqual(before.remaining);
      expect(after.remaining).toBeLessThanOrEqual(limit);
      if (algorithm === 'token-bucket') {
        // Never more than was spent, never above a full bucket; all of it when the bucket has only
        // refilled since the spend (nothing else touched it).
        expect(after.remaining).toBeLessThanOrEqual(Math.min(limit, before.remaining + op.cost));
        if ((touched[op.key] ?? 0) <= now - ago)
          expect(after.remaining).toBe(Math.min(limit, before.remaining + op.cost));
        touched[op.key] = now;
      }
      if (model) {
        const anchor = anchors[op.key] as { start?: number };
        const log = logs[op.key] as [number, number][];
        model.refund(log, now, op.cost, ago, anchor);
        // What a unit call would find now (decided on a copy: a peek anchors nothing).
        expect(after.remaining).toBe(model.decide(log, now, 0, { ...anchor }).remaining);
      }
      continue;
    }
    const d = limiter.consume(op.key, op.cost) as Decision;
    touched[op.key] = now;
    expect(d.limit).toBe(limit);
    if (d.allowed) calls[op.key]?.unshift(now);
    expect(d.remaining).toBeGreaterThanOrEqual(0);
    expect(d.retryAfterMs).toBe(d.allowed ? 0 : d.retryAfterMs);
    if (!d.allowed) expect(d.retryAfterMs).toBeGreaterThan(0);
    if (model) {
      const log = logs[op.key] as [number, number][];
      const anchor = anchors[op.key] as { start?: number };
      if (
        log.length === 0 &&
        !(
          anchor.start !== undefined &&
          now < anchor.start + (algorithm === 'sliding-window' ? 2 * w : w)
        )
      ) {
        anchors[op.key] = {};
      }
      const expected = model.decide(log, now, op.cost, anchors[op.key] as { start?: number });
      expect({ allowed: d.allowed, remaining: d.remaining }).toEqual(expected);
      if (d.allowed) log.push([now, op.cost]);
      else if (log.length === 0 && algorithm === 'fixed-window') anchors[op.key] = {};
    }
  }
}

type LiveOp =
  | { t: 'consume'; key: 'a' | 'b'; cost: number }
  | { t: 'peek'; key: 'a' | 'b' }
  | { t: 'advance'; ms: number }
  | { t: 'reconfigure'; windowMs: number };

/**
 * A fixed window reconfigured live, against a model that states the rule: a window that had ended
 * under the rule in force when it ended stays ended; one still running takes the new length from
 * the reconfigure on, its count whole, however long it then goes untouched (the memory store's
 * sweep runs meanwhile).
 */
function runLive(limit: number, ops: LiveOp[]): void {
  const clock = manualClock(0);
  let w = 1000;
  const limiter = createWindowLimiter({ limit, windowMs: w, clock, timers: clock });
  const model: Record<string, { start: number; used: number } | undefined> = {};
  const live = (key: string) => {
    const m = model[key];
    return m !== undefined && clock.now() < m.start + w ? m : undefined;
  };
  for (const op of ops) {
    if (op.t === 'advance') {
      clock.advance(op.ms);
    } else if (op.t === 'reconfigure') {
      for (const key of ['a', 'b']) if (live(key) === undefined) model[key] = undefined;
      w = op.windowMs;
      limiter.reconfigure({ windowMs: w });
    } else if (op.t === 'peek') {
      const m = live(op.key);
      expect(limiter.peek(op.key)).toMatchObject({
        remaining: m === undefined ? limit : Math.max(0, limit - m.used),
        resetMs: m === undefined ? 0 : m.start + w - clock.now(),
      });
    } else {
      const m = live(op.key) ?? { start: clock.now(), used: 0 };
      const allowed = m.used + op.cost <= limit;
      if (allowed) m.used += op.cost;
      model[op.key] = m;
      expect(limiter.consume(op.key, op.cost)).toMatchObject({
        allowed,
        remaining: allowed ? limit - m.used : Math.max(0, limit - m.used),
        resetMs: m.start + w - clock.now(),
      });
    }
  }
  settled(limiter.close());
}

describe('a live reconfigure against the model', () => {
  it('fixed window: counts are kept and read under the new windowMs, untouched or not', () => {
    const liveOp: fc.Arbitrary<LiveOp> = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          t: fc.constant('consume' as const),
          key: fc.constantFrom('a' as const, 'b' as const),
          cost: fc.integer({ min: 1, max: 4 }),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          t: fc.constant('peek' as const),
          key: fc.constantFrom('a' as const, 'b' as const),
        }),
      },
      { weight: 4, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: step(70_000) }) },
      {
        weight: 2,
        arbitrary: fc.record({
          t: fc.constant('reconfigure' as const),
          windowMs: fc.constantFrom(300, 1000, 2500, 60_000, 120_000),
        }),
      },
    );
    fc.assert(
      fc.property(fc.array(liveOp, { maxLength: 60 }), (ops) => runLive(4, ops)),
      { numRuns: 300 },
    );
  });
});

describe('algorithms against reference models', () => {
  it('fixed window matches the log model', () => {
    fc.assert(
      fc.property(fc.array(opArb(4, 1500), { maxLength: 80 }), (ops) =>
        runWindow('fixed-window', 5, 1000, fixedModel(5, 1000), ops),
      ),
      {
        numRuns: 300,
      },
    );
  });

  it('sliding window matches the log model', () => {
    fc.assert(
      fc.property(fc.array(opArb(4, 1500), { maxLength: 80 }), (ops) =>
        runWindow('sliding-window', 6, 1000, slidingModel(6, 1000), ops),
      ),
      { numRuns: 300 },
    );
  });

  it('a refund of no count is refused as consume refuses it; a bad agoMs counts as just spent', async () => {
    const clock = manualClock(0);
    const limiter = createWindowLimiter({ limit: 2, clock, timers: clock });
    limiter.consume('k', 2);
    for (const cost of [undefined, 0, -1, 1.5, Number.NaN, '1']) {
      expect(() => limiter.refund('k', cost as number, 0)).toThrow(
        expect.objectContaining({ code: 'ERR_PORTCULLIS_COST' }),
      );
    }
    expect((limiter.peek('k') as Decision).remaining).toBe(0);
    await limiter.refund('k', 1, Number.NaN);
    await limiter.refund('k', 1, -5);
    expect((limiter.peek('k') as Decision).remaining).toBe(2);
  });

  it('token bucket keeps its invariants', () => {
    fc.assert(
      fc.property(fc.array(opArb(4, 700), { maxLength: 80 }), (ops) =>
        runWindow('token-bucket', 5, 1000, undefined, ops),
      ),
      {
        numRuns: 300,
      },
    );
  });

  it.each(['fixed-window', 'sliding-window', 'token-bucket'] as const)(
    '%s keeps the promises a decision makes',
    (algorithm) => {
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 900 })), {
            maxLength: 40,
          }),
          fc.integer({ min: 1, max: 7 }),
          (steps, limit) => {
            const clock = manualClock(0);
            const l = createWindowLimiter({
              algorithm,
              limit,
              windowMs: 1000,
              clock,
              timers: clock,
            });
            for (const [cost, ms] of steps) {
              clock.advance(ms);
              const d = l.consume('k', cost) as Decision;
              if (d.allowed) {
                // `remaining` more unit calls pass right now, and not one more.
                for (let i = 0; i < d.remaining; i++)
                  expect((l.consume('k') as Decision).allowed).toBe(true);
                expect((l.consume('k') as Decision).allowed).toBe(false);
              } else if (cost <= limit) {
                // Waiting exactly retryAfterMs is enough, and one millisecond less is not.
                if (d.retryAfterMs > 1) {
                  clock.advance(d.retryAfterMs - 1);
                  expect((l.peek('k') as Decision).allowed && cost === 1).toBe(false);
                  clock.advance(1);
                } else {
                  clock.advance(d.retryAfterMs);
                }
                expect((l.consume('k', cost) as Decision).allowed).toBe(true);
              }
            }
          },
        ),
        { numRuns: 300 },
      );
    },
  );
});

describe('failure limiter against a reference model', () => {
  it('matches a log + lockout model under random failures, checks, resets and clock steps', () => {
    const max = 4;
    const windowMs = 1000;
    const lockoutMs = 3000;
    const op = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          t: fc.constant('fail' as const),
          key: fc.constantFrom('1.1.1.1', '2.2.2.2'),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          t: fc.constant('check' as const),
          key: fc.constantFrom('1.1.1.1', '2.2.2.2'),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          t: fc.constant('success' as const),
          key: fc.constantFrom('1.1.1.1', '2.2.2.2'),
        }),
      },
      { weight: 3, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: step(1200) }) },
      {
        weight: 1,
        arbitrary: fc.record({
          t: fc.constant('rewind' as const),
          ms: fc.oneof(fc.integer({ min: 1, max: 5000 }), fc.constant(3_600_000)),
        }),
      },
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 20, maxLength: 100 }), (ops) => {
        const clock = manualClock(0);
        const l = createFailureLimiter({
          maxAttempts: max,
          windowMs,
          lockoutMs,
          clock,
          timers: clock,
        });
        const model = new Map<string, { fails: number[]; lockedUntil: number }>();
        for (const o of ops) {
          if (o.t === 'advance') {
            clock.advance(o.ms);
            continue;
          }
          if (o.t === 'rewind') {
            clock.set(clock.now() - o.ms);
            continue;
          }
          const now = clock.now();
          const m = model.get(o.key) ?? { fails: [], lockedUntil: 0 };
          // State stamped in the future (the clock stepped back) is clamped to now when read.
          if (m.lockedUntil !== 0 && m.lockedUntil > now + lockoutMs)
            m.lockedUntil = now + lockoutMs;
          m.fails = m.fails.map((t) => Math.min(t, now));
          if (m.lockedUntil !== 0 && now >= m.lockedUntil) {
            m.fails = [];
            m.lockedUntil = 0;
          }
          m.fails = m.fails.filter((t) => t + windowMs > now);
          model.set(o.key, m);
          const isLocked = m.lockedUntil !== 0 && m.lockedUntil > now;
          if (o.t === 'success') {
            // A success never lifts a lockout in force; otherwise it clears the history.
            const d = l.recordSuccess(o.key) as Decision;
            if (isLocked) {
              expect(d).toMatchObject({
                allowed: false,
                reason: 'locked',
                retryAfterMs: m.lockedUntil - now,
              });
            } else {
              expect(d).toMatchObject({ allowed: true, reason: 'allowed', remaining: max });
              model.delete(o.key);
            }
          } else if (o.t === 'check') {
            const d = l.check(o.key) as Decision;
            expect(d).toMatchObject(
              isLocked
                ? { allowed: false, reason: 'locked', retryAfterMs: m.lockedUntil - now }
                : { allowed: true, remaining: max - m.fails.length },
            );
          } else {
            const d = l.recordFailure(o.key) as Decision;
            if (isLocked) {
              expect(d).toMatchObject({
                allowed: false,
                reason: 'locked',
                retryAfterMs: m.lockedUntil - now,
              });
            } else {
              m.fails.push(now);
              if (m.fails.length >= max) {
                m.lockedUntil = now + lockoutMs;
                m.fails = [];
                expect(d).toMatchObject({
                  allowed: false,
                  reason: 'locked',
                  retryAfterMs: lockoutMs,
                });
              } else {
                expect(d).toMatchObject({ allowed: true, remaining: max - m.fails.length });
              }
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('a clock that steps back (state stamped in the future is clamped to now)', () => {
  type StepOp =
    | { t: 'consume'; cost: number; wait: boolean }
    | { t: 'peek'; wait: boolean }
    | { t: 'refund'; cost: number; ago: number }
    | { t: 'advance'; ms: number }
    | { t: 'rewind'; ms: number };
  const stepOp: fc.Arbitrary<StepOp> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        t: fc.constant('consume' as const),
        cost: fc.integer({ min: 1, max: 4 }),
        wait: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('peek' as const), wait: fc.boolean() }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('refund' as const),
        cost: fc.integer({ min: 1, max: 4 }),
        ago: step(3000),
      }),
    },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: step(1500) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('rewind' as const),
        ms: fc.oneof(fc.integer({ min: 1, max: 5000 }), fc.constant(3_600_000)),
      }),
    },
  );
  /** The longest honest wait: one window; two for the sliding window (the time it takes to drain). */
  const longest = (rule: WindowRule) =>
    rule.algorithm === 'sliding-window' ? 2 * rule.windowMs : rule.windowMs;

  it.each(['fixed-window', 'sliding-window', 'token-bucket'] as const)(
    '%s: no wait exceeds the window, and waiting retryAfterMs is enough',
    (algorithm) => {
      fc.assert(
        fc.property(
          fc.array(stepOp, { minLength: 10, maxLength: 60 }),
          fc.integer({ min: 1, max: 6 }),
          fc.constantFrom(1000, 7, 60_000),
          (ops, limit, windowMs) => {
            const clock = manualClock(0);
            const store = new MemoryStore({ clock, timers: clock });
            const rule: WindowRule = { algorithm, limit, windowMs };
            const bounded = (d: Decision) => {
              expect(d.retryAfterMs).toBeGreaterThanOrEqual(d.allowed ? 0 : 1);
              expect(d.retryAfterMs).toBeLessThanOrEqual(d.allowed ? 0 : longest(rule));
              expect(d.resetMs).toBeGreaterThanOrEqual(0);
              expect(d.resetMs).toBeLessThanOrEqual(longest(rule));
              expect(d.remaining).toBeGreaterThanOrEqual(0);
              expect(d.remaining).toBeLessThanOrEqual(limit);
            };
            for (const op of ops) {
              if (op.t === 'advance') clock.advance(op.ms);
              else if (op.t === 'rewind') clock.set(clock.now() - op.ms);
              else if (op.t === 'refund') {
                // A refund after a step back clamps like any access: the bounds still hold.
                store.refund('k', rule, op.cost, op.ago);
                bounded(store.peek('k', rule));
              } else {
                const cost = op.t === 'consume' ? op.cost : 1;
                const d =
                  op.t === 'consume' ? store.consume('k', rule, cost) : store.peek('k', rule);
                bounded(d);
                if (!d.allowed && op.wait && cost <= limit) {
                  clock.advance(d.retryAfterMs);
                  const after = store.consume('k', rule, cost);
                  bounded(after);
                  expect(after.allowed).toBe(true);
                }
              }
            }
            store.close();
          },
        ),
        { numRuns: 300 },
      );
    },
  );

  it('failure log: a lockout never exceeds lockoutMs, and waiting retryAfterMs is enough', () => {
    const rule = { maxAttempts: 3, windowMs: 1000, lockoutMs: 3000 };
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            { weight: 4, arbitrary: fc.constant({ t: 'fail' as const }) },
            { weight: 1, arbitrary: fc.constant({ t: 'success' as const }) },
            { weight: 2, arbitrary: fc.record({ t: fc.constant('wait' as const) }) },
            {
              weight: 2,
              arbitrary: fc.record({ t: fc.constant('advance' as const), ms: step(1500) }),
            },
            {
              weight: 2,
              arbitrary: fc.record({
                t: fc.constant('rewind' as const),
                ms: fc.oneof(fc.integer({ min: 1, max: 5000 }), fc.constant(3_600_000)),
              }),
            },
          ),
          { minLength: 10, maxLength: 80 },
        ),
        (ops) => {
          const clock = manualClock(0);
          const store = new MemoryStore({ clock, timers: clock });
          const bounded = (d: Decision) => {
            if (d.allowed) {
              expect(d.retryAfterMs).toBe(0);
              expect(d.resetMs).toBeLessThanOrEqual(rule.windowMs);
            } else {
              expect(d.reason).toBe('locked');
              expect(d.retryAfterMs).toBeGreaterThanOrEqual(1);
              expect(d.retryAfterMs).toBeLessThanOrEqual(rule.lockoutMs);
              expect(d.resetMs).toBe(d.retryAfterMs);
            }
          };
          for (const op of ops) {
            if (op.t === 'advance') clock.advance(op.ms);
            else if (op.t === 'rewind') clock.set(clock.now() - op.ms);
            else if (op.t === 'success') bounded(store.recordSuccess('f', rule));
            else if (op.t === 'fail') bounded(store.recordFailure('f', rule));
            else {
              const d = store.checkFailures('f', rule);
              bounded(d);
              if (!d.allowed) {
                clock.advance(d.retryAfterMs);
                expect(store.checkFailures('f', rule)).toMatchObject({
                  allowed: true,
                  remaining: rule.maxAttempts,
                });
              }
            }
          }
          store.close();
        },
      ),
      { numRuns: 300 },
    );
  });
});
