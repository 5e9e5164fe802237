import { describe, expect, it } from 'vitest';
import type { Decision } from '../decision.js';
import { d } from './expected-decision.js';
import type { FailureRule, Store, WindowRule } from '../store.js';
import type { WithStore } from './with-store.js';
import { layerConformance } from './layer-conformance.js';
import { leaseConformance } from './lease-conformance.js';
import { accessConformance } from './access-conformance.js';

/** What a store's conformance run needs: a fresh store whose clock the suite can move. */
export interface StoreHarness {
  /** A store with no keys (or a fresh key prefix). */
  readonly store: Store;
  /** Moves the store's clock forward by `ms`. */
  advance(ms: number): void | Promise<void>;
  /**
   * Moves the store's clock back by `ms`: a wall-clock step (NTP, a VM resume). With
   * `manualClock`: `(ms) => clock.set(clock.now() - ms)`.
   */
  rewind(ms: number): void | Promise<void>;
  /** Releases the store. */
  teardown?(): void | Promise<void>;
}

const fixed: WindowRule = { algorithm: 'fixed-window', limit: 3, windowMs: 1000 };
const sliding: WindowRule = { algorithm: 'sliding-window', limit: 4, windowMs: 1000 };
const bucket: WindowRule = { algorithm: 'token-bucket', limit: 5, windowMs: 1000 };
const failures: FailureRule = { maxAttempts: 3, windowMs: 1000, lockoutMs: 5000 };

/** What a store under test cannot promise (every default is the full contract). */
export interface ConformanceOptions {
  /**
   * `false` for a store whose `restamp` reaches only part of the keys (a RedisStore on a Cluster
   * walks what the client's `SCAN` reaches): the exact re-stamp tests are replaced by one that it
   * runs and changes no answer. @default true
   */
  readonly restampEveryKey?: boolean;
  /**
   * `false` for a store without the optional leases (`acquire`, `release`: what `concurrency`
   * needs): their tests are replaced by one that checks the store has neither. @default true
   */
  readonly leases?: boolean;
  /**
   * `false` for a store without the optional access-list methods (`accessRules`, `putAccessRule`,
   * `removeAccessRule`: what `createAccessList` needs): their tests are replaced by one that
   * checks the store has none. @default true
   */
  readonly access?: boolean;
}

/** Tells the store a limiter was reconfigured (every store the suite checks implements it). */
async function restamp(
  s: Store,
  prefix: string,
  before: WindowRule | FailureRule,
  after: WindowRule | FailureRule,
): Promise<void> {
  expect(typeof s.restamp, 'Store.restamp').toBe('function');
  await s.restamp?.(prefix, before, after);
}

/**
 * The suite every {@link Store} must pass: exact decisions of every algorithm and of the failure
 * log at every boundary, `recordSuccess` against a lockout in force, and state stamped in the
 * future by a clock that stepped back, driven by the harness's clock. Run it from a test file:
 * `describeStoreConformance('MemoryStore', () => { const c = manualClock(); return { store: new MemoryStore({ clock: c, timers: c }), advance: c.advance, rewind: (ms) => c.set(c.now() - ms) }; })`.
 */
export function describeStoreConformance(
  name: string,
  factory: () => StoreHarness | Promise<StoreHarness>,
  options: ConformanceOptions = {},
): void {
  describe(`${name} store conformance`, () => {
    const withStore: WithStore = async (body) => {
      const h = await factory();
      try {
        await body(
          h.store,
          async (ms) => {
            await h.advance(ms);
          },
          async (ms) => {
            await h.rewind(ms);
          },
        );
      } finally {
        await h.teardown?.();
      }
    };

    it('fixed window: anchored at the first call, refused calls free, reopens exactly at reset', () =>
      withStore(async (s, advance) => {
        expect(await s.consume('k', fixed, 1)).toEqual(d('k', 3, true, 'allowed', 2, 0, 1000));
        expect(await s.consume('k', fixed, 1)).toEqual(d('k', 3, true, 'allowed', 1, 0, 1000));
        expect(await s.consume('k', fixed, 1)).toEqual(d('k', 3, true, 'allowed', 0, 0, 1000));
        expect(await s.consume('k', fixed, 1)).toEqual(d('k', 3, false, 'limited', 0, 1000, 1000));
        await advance(400);
        expect(await s.consume('k', fixed, 1)).toEqual(d('k', 3, false, 'limited', 0, 600, 600));
        expect(await s.peek('k', fixed)).toEqual(d('k', 3, false, 'limited', 0, 600, 600));
        await advance(599);
        expect(await s.consume('k', fixed, 1)).toEqual(d('k', 3, false, 'limited', 0, 1, 1));
        await advance(1);
        expect(await s.consume('k', fixed, 1)).toEqual(d('k', 3, true, 'allowed', 2, 0, 1000));
        expect(await s.consume('k', fixed, 2)).toEqual(d('k', 3, true, 'allowed', 0, 0, 1000));
      }));

    it('fixed window: a too-large cost is refused and spends nothing; peek has no side effects', () =>
      withStore(async (s, advance) => {
        expect(await s.peek('c', fixed)).toEqual(d('c', 3, true, 'allowed', 3, 0, 0));
        expect(await s.consume('c', fixed, 2)).toEqual(d('c', 3, true, 'allowed', 1, 0, 1000));
        await advance(250);
        expect(await s.consume('c', fixed, 2)).toEqual(d('c', 3, false, 'limited', 1, 750, 750));
        expect(await s.peek('c', fixed)).toEqual(d('c', 3, true, 'allowed', 1, 0, 750));
        expect(await s.peek('c', fixed)).toEqual(d('c', 3, true, 'allowed', 1, 0, 750));
        expect(await s.consume('c', fixed, 1)).toEqual(d('c', 3, true, 'allowed', 0, 0, 750));
        expect(await s.consume('c', fixed, 4)).toEqual(d('c', 3, false, 'limited', 0, 750, 750));
        expect(await s.consume('fresh', fixed, 4)).toEqual(
          d('fresh', 3, false, 'limited', 3, 1000, 1000),
        );
        expect(await s.peek('fresh', fixed)).toEqual(d('fresh', 3, true, 'allowed', 3, 0, 0));
      }));

    it('sliding window: the previous window weighs by its overlap', () =>
      withStore(async (s, advance) => {
        for (const remaining of [3, 2, 1, 0]) {
          expect(await s.consume('s', sliding, 1)).toEqual(
            d('s', 4, true, 'allowed', remaining, 0, 2000),
          );
        }
        expect(await s.consume('s', sliding, 1)).toEqual(
          d('s', 4, false, 'limited', 0, 1250, 2000),
        );
        await advance(1000);
        expect(await s.consume('s', sliding, 1)).toEqual(d('s', 4, false, 'limited', 0, 250, 1000));
        expect(await s.peek('s', sliding)).toEqual(d('s', 4, false, 'limited', 0, 250, 1000));
        await advance(249);
        expect(await s.consume('s', sliding, 1)).toEqual(
          d('s', 4, false, 'limited', 0, 1, 1000 - 249),
        );
        await advance(1);
        expect(await s.consume('s', sliding, 1)).toEqual(d('s', 4, true, 'allowed', 0, 0, 1750));
        await advance(500);
        // prev 4 × 250 + curr 1 × 1000 = 2000 of 4000: two more fit.
        expect(await s.peek('s', sliding)).toEqual(d('s', 4, true, 'allowed', 2, 0, 1250));
        expect(await s.consume('s', sliding, 2)).toEqual(d('s', 4, true, 'allowed', 0, 0, 1250));
        await advance(250);
        expect(await s.peek('s', sliding)).toEqual(d('s', 4, true, 'allowed', 1, 0, 1000));
        await advance(1000);
        expect(await s.consume('s', sliding, 1)).toEqual(d('s', 4, true, 'allowed', 3, 0, 2000));
        expect(await s.peek('t', sliding)).toEqual(d('t', 4, true, 'allowed', 4, 0, 0));
      }));

    it('token bucket: continuous refill in exact integer steps', () =>
      withStore(async (s, advance) => {
        for (const [remaining, reset] of [
          [4, 200],
          [3, 400],
          [2, 600],
          [1, 800],
          [0, 1000],
        ] as const) {
          expect(await s.consume('b', bucket, 1)).toEqual(
            d('b', 5, true, 'allowed', remaining, 0, reset),
          );
        }
        expect(await s.consume('b', bucket, 1)).toEqual(d('b', 5, false, 'limited', 0, 200, 1000));
        await advance(100);
        expect(await s.consume('b', bucket, 1)).toEqual(d('b', 5, false, 'limited', 0, 100, 900));
        expect(await s.peek('b', bucket)).toEqual(d('b', 5, false, 'limited', 0, 100, 900));
        await advance(100);
        expect(await s.consume('b', bucket, 1)).toEqual(d('b', 5, true, 'allowed', 0, 0, 1000));
        expect(await s.consume('b2', bucket, 3)).toEqual(d('b2', 5, true, 'allowed', 2, 0, 600));
        expect(await s.consume('b2', bucket, 3)).toEqual(d('b2', 5, false, 'limited', 2, 200, 600));
        await advance(5000);
        expect(await s.peek('b2', bucket)).toEqual(d('b2', 5, true, 'allowed', 5, 0, 0));
        expect(await s.consume('b2', bucket, 6)).toEqual(d('b2', 5, false, 'limited', 5, 1000, 0));
        expect(await s.consume('s2', sliding, 5)).toEqual(d('s2', 4, false, 'limited', 4, 1000, 0));
      }));

    it('failure log: the failure reaching maxAttempts locks; lockout neither counts nor extends; expiry clears', () =>
      withStore(async (s, advance) => {
        expect(await s.checkFailures('f', failures)).toEqual(d('f', 3, true, 'allowed', 3, 0, 0));
        expect(await s.recordFailure('f', failures)).toEqual(
          d('f', 3, true, 'allowed', 2, 0, 1000),
        );
        await advance(100);
        expect(await s.recordFailure('f', failures)).toEqual(
          d('f', 3, true, 'allowed', 1, 0, 1000),
        );
        expect(await s.checkFailures('f', failures)).toEqual(
          d('f', 3, true, 'allowed', 1, 0, 1000),
        );
        await advance(100);
        expect(await s.recordFailure('f', failures)).toEqual({
          ...d('f', 3, false, 'locked', 0, 5000, 5000),
          lockoutStarted: true,
        });
        expect(await s.checkFailures('f', failures)).toEqual(
          d('f', 3, false, 'locked', 0, 5000, 5000),
        );
        await advance(1000);
        const during = await s.recordFailure('f', failures);
        expect(during).toEqual(d('f', 3, false, 'locked', 0, 4000, 4000));
        expect(during).not.toHaveProperty('lockoutStarted', true);
        await advance(3999);
        expect(await s.checkFailures('f', failures)).toEqual(d('f', 3, false, 'locked', 0, 1, 1));
        await advance(1);
        expect(await s.checkFailures('f', failures)).toEqual(d('f', 3, true, 'allowed', 3, 0, 0));
        expect(await s.recordFailure('f', failures)).toEqual(
          d('f', 3, true, 'allowed', 2, 0, 1000),
        );
      }));

    it('failure log: a failure exactly windowMs old has expired', () =>
      withStore(async (s, advance) => {
        await s.recordFailure('g', failures);
        await advance(500);
        await s.recordFailure('g', failures);
        await advance(500);
        expect(await s.checkFailures('g', failures)).toEqual(d('g', 3, true, 'allowed', 2, 0, 500));
        expect(await s.recordFailure('g', failures)).toEqual(
          d('g', 3, true, 'allowed', 1, 0, 1000),
        );
        await advance(499);
        expect(await s.recordFailure('g', failures)).toEqual({
          ...d('g', 3, false, 'locked', 0, 5000, 5000),
          lockoutStarted: true,
        });
      }));

    it('recordSuccess clears the history, but a lockout in force stays and answers locked', () =>
      withStore(async (s, advance) => {
        expect(await s.recordSuccess('ok', failures)).toEqual(d('ok', 3, true, 'allowed', 3, 0, 0));
        await s.recordFailure('ok', failures);
        await advance(100);
        await s.recordFailure('ok', failures);
        expect(await s.recordSuccess('ok', failures)).toEqual(d('ok', 3, true, 'allowed', 3, 0, 0));
        expect(await s.checkFailures('ok', failures)).toEqual(d('ok', 3, true, 'allowed', 3, 0, 0));
        for (let i = 0; i < 3; i++) await s.recordFailure('ok', failures);
        await advance(1000);
        expect(await s.recordSuccess('ok', failures)).toEqual(
          d('ok', 3, false, 'locked', 0, 4000, 4000),
        );
        expect(await s.checkFailures('ok', failures)).toEqual(
          d('ok', 3, false, 'locked', 0, 4000, 4000),
        );
        await advance(4000);
        expect(await s.recordSuccess('ok', failures)).toEqual(d('ok', 3, true, 'allowed', 3, 0, 0));
        expect(await s.recordFailure('ok', failures)).toEqual(
          d('ok', 3, true, 'allowed', 2, 0, 1000),
        );
        // Only a failure history is cleared: a window under the same name is another kind.
        expect(await s.recordSuccess('never-seen', failures)).toEqual(
          d('never-seen', 3, true, 'allowed', 3, 0, 0),
        );
      }));

    it('a window met again under another windowMs runs to the end the new rule gives it', () =>
      withStore(async (s, advance) => {
        const longer: WindowRule = { ...fixed, limit: 5, windowMs: 3000 };
        expect(await s.consume('w', fixed, 1)).toEqual(d('w', 3, true, 'allowed', 2, 0, 1000));
        await advance(100);
        expect(await s.consume('w', longer, 1)).toEqual(d('w', 5, true, 'allowed', 3, 0, 2900));
        await advance(1000);
        expect(await s.consume('w', longer, 1)).toEqual(d('w', 5, true, 'allowed', 2, 0, 1900));
        expect(await s.peek('w', longer)).toEqual(d('w', 5, true, 'allowed', 2, 0, 1900));
        await advance(1900);
        expect(await s.consume('w', longer, 1)).toEqual(d('w', 5, true, 'allowed', 4, 0, 3000));
        // Back to the shorter window: it ended long ago, a new one starts.
        await advance(1500);
        expect(await s.consume('w', fixed, 1)).toEqual(d('w', 3, true, 'allowed', 2, 0, 1000));
      }));

    if (options.restampEveryKey === false) {
      it('restamp: runs, and changes no answer under an unchanged rule', () =>
        withStore(async (s) => {
          expect(await s.consume('rp', fixed, 2)).toEqual(d('rp', 3, true, 'allowed', 1, 0, 1000));
          await restamp(s, '', fixed, fixed);
          expect(await s.peek('rp', fixed)).toEqual(d('rp', 3, true, 'allowed', 1, 0, 1000));
        }));
    } else {
      it('restamp: a window widened live keeps its count past the end the old rule stamped', () =>
        withStore(async (s, advance) => {
          const wide = (r: WindowRule): WindowRule => ({ ...r, windowMs: 60_000 });
          expect(await s.consume('rf', fixed, 2)).toEqual(d('rf', 3, true, 'allowed', 1, 0, 1000));
          expect(await s.consume('rs', sliding, 2)).toEqual(
            d('rs', 4, true, 'allowed', 2, 0, 2000),
          );
          await advance(500);
          await restamp(s, '', fixed, wide(fixed));
          await restamp(s, '', sliding, wide(sliding));
          await advance(1000);
          // Untouched across the old end: read under the new rule, the counts are whole.
          expect(await s.peek('rf', wide(fixed))).toEqual(
            d('rf', 3, true, 'allowed', 1, 0, 58_500),
          );
          expect(await s.peek('rs', wide(sliding))).toEqual(
            d('rs', 4, true, 'allowed', 2, 0, 118_500),
          );
          await advance(58_500);
          expect(await s.peek('rf', wide(fixed))).toEqual(d('rf', 3, true, 'allowed', 3, 0, 0));
        }));

      it('restamp: what ended under the old rule, or ends at once under the new one, is gone', () =>
        withStore(async (s, advance) => {
          const wide: WindowRule = { ...fixed, windowMs: 60_000 };
          expect(await s.consume('ended', fixed, 3)).toEqual(
            d('ended', 3, true, 'allowed', 0, 0, 1000),
          );
          await advance(1000);
          await restamp(s, '', fixed, wide);
          expect(await s.peek('ended', wide)).toEqual(d('ended', 3, true, 'allowed', 3, 0, 0));
          expect(await s.consume('long', wide, 2)).toEqual(
            d('long', 3, true, 'allowed', 1, 0, 60_000),
          );
          await advance(5000);
          await restamp(s, '', wide, fixed);
          expect(await s.peek('long', fixed)).toEqual(d('long', 3, true, 'allowed', 3, 0, 0));
          // Only the keys under the prefix, only the state the rule governs.
          await s.recordFailure('auth:x', failures);
          expect(await s.consume('api:y', fixed, 1)).toEqual(
            d('api:y', 3, true, 'allowed', 2, 0, 1000),
          );
          await advance(900);
          await restamp(s, 'auth:', fixed, wide);
          await restamp(s, 'other:', fixed, wide);
          await advance(200);
          expect(await s.peek('api:y', wide)).toEqual(d('api:y', 3, true, 'allowed', 3, 0, 0));
          expect(await s.checkFailures('auth:x', failures)).toEqual(
            d('auth:x', 3, true, 'allowed', 3, 0, 0),
          );
        }));

      it('restamp: failures keep counting under a widened window; none that had expired counts again', () =>
        withStore(async (s, advance) => {
          const wide: FailureRule = { ...failures, windowMs: 600_000 };
          await s.recordFailure('f', failures);
          await advance(600);
          await s.recordFailure('f', failures);
          await advance(500);
          // The first failure has expired (1 100 ms old) but is still held until the next read.
          await restamp(s, '', failures, wide);
          await advance(5000);
          expect(await s.checkFailures('f', wide)).toEqual(
            d('f', 3, true, 'allowed', 2, 0, 594_500),
          );
          expect(await s.recordFailure('f', wide)).toEqual(
            d('f', 3, true, 'allowed', 1, 0, 600_000),
          );
          // A lockout keeps its end.
          for (let i = 0; i < 3; i++) await s.recordFailure('l', failures);
          await restamp(s, '', failures, wide);
          await advance(4000);
          expect(await s.checkFailures('l', wide)).toEqual(
            d('l', 3, false, 'locked', 0, 1000, 1000),
          );
          await advance(1000);
          expect(await s.checkFailures('l', wide)).toEqual(d('l', 3, true, 'allowed', 3, 0, 0));
        }));
    }

    it('a rule with a lower maxAttempts locks a key already over it, from the next call on', () =>
      withStore(async (s, advance) => {
        const five: FailureRule = { ...failures, maxAttempts: 5 };
        for (let i = 0; i < 3; i++) await s.recordFailure('m', five);
        await advance(100);
        expect(await s.checkFailures('m', failures)).toEqual(
          d('m', 3, false, 'locked', 0, 5000, 5000),
        );
        await advance(1000);
        expect(await s.recordSuccess('m', five)).toEqual(d('m', 5, false, 'locked', 0, 4000, 4000));
        // Below the new limit, the failure that reaches it starts the lockout as usual.
        for (let i = 0; i < 2; i++) await s.recordFailure('n', five);
        expect(await s.recordFailure('n', failures)).toEqual({
          ...d('n', 3, false, 'locked', 0, 5000, 5000),
          lockoutStarted: true,
        });
        // Over it, a failure finds the lockout already in force: it neither counts nor starts one.
        for (let i = 0; i < 4; i++) await s.recordFailure('o', five);
        expect(await s.recordFailure('o', failures)).toEqual(
          d('o', 3, false, 'locked', 0, 5000, 5000),
        );
      }));

    it('a success racing wrong credentials never erases the lockout they start', () =>
      withStore(async (s) => {
        // 20 concurrent failures with successes among them, in the order the calls are made.
        const calls: Promise<Decision>[] = [];
        const successes: Promise<Decision>[] = [];
        for (let i = 0; i <= 20; i++) {
          if (i === 0 || i === 3 || i === 10 || i === 20) {
            const p = Promise.resolve(s.recordSuccess('race', failures));
            successes.push(p);
            calls.push(p);
          }
          if (i < 20) calls.push(Promise.resolve(s.recordFailure('race', failures)));
        }
        await Promise.all(calls);
        expect(await Promise.all(successes)).toEqual([
          d('race', 3, true, 'allowed', 3, 0, 0),
          d('race', 3, false, 'locked', 0, 5000, 5000),
          d('race', 3, false, 'locked', 0, 5000, 5000),
          d('race', 3, false, 'locked', 0, 5000, 5000),
        ]);
        expect(await s.checkFailures('race', failures)).toEqual(
          d('race', 3, false, 'locked', 0, 5000, 5000),
        );
      }));

    it('clock stepped back: a lockout lasts at most lockoutMs from now, future failures count as now', () =>
      withStore(async (s, advance, rewind) => {
        for (let i = 0; i < 3; i++) await s.recordFailure('L', failures);
        await advance(1000);
        await rewind(3_600_000);
        expect(await s.checkFailures('L', failures)).toEqual(
          d('L', 3, false, 'locked', 0, 5000, 5000),
        );
        await advance(4999);
        expect(await s.recordFailure('L', failures)).toEqual(d('L', 3, false, 'locked', 0, 1, 1));
        await advance(1);
        expect(await s.checkFailures('L', failures)).toEqual(d('L', 3, true, 'allowed', 3, 0, 0));

        await s.recordFailure('F', failures);
        await advance(500);
        await s.recordFailure('F', failures);
        await rewind(3_600_000);
        // Both failures now count as made now: for windowMs from now, and not one ms longer.
        expect(await s.checkFailures('F', failures)).toEqual(
          d('F', 3, true, 'allowed', 1, 0, 1000),
        );
        await advance(999);
        expect(await s.checkFailures('F', failures)).toEqual(d('F', 3, true, 'allowed', 1, 0, 1));
        await advance(1);
        expect(await s.checkFailures('F', failures)).toEqual(d('F', 3, true, 'allowed', 3, 0, 0));

        // A success in a lockout stamped in the future is refused for at most lockoutMs too.
        for (let i = 0; i < 3; i++) await s.recordFailure('S', failures);
        await rewind(60_000);
        expect(await s.recordSuccess('S', failures)).toEqual(
          d('S', 3, false, 'locked', 0, 5000, 5000),
        );
        await advance(5000);
        expect(await s.recordSuccess('S', failures)).toEqual(d('S', 3, true, 'allowed', 3, 0, 0));
      }));

    it('clock stepped back: windows last at most one window from now, and the wait advertised is enough', () =>
      withStore(async (s, advance, rewind) => {
        for (let i = 0; i < 3; i++) await s.consume('W', fixed, 1);
        await advance(200);
        await rewind(3_600_000);
        expect(await s.consume('W', fixed, 1)).toEqual(d('W', 3, false, 'limited', 0, 1000, 1000));
        await advance(1000);
        expect(await s.consume('W', fixed, 1)).toEqual(d('W', 3, true, 'allowed', 2, 0, 1000));

        // A peek keeps the clamp, so the wait it advertises is enough.
        for (let i = 0; i < 3; i++) await s.consume('P', fixed, 1);
        await rewind(3_600_000);
        expect(await s.peek('P', fixed)).toEqual(d('P', 3, false, 'limited', 0, 1000, 1000));
        await advance(400);
        expect(await s.peek('P', fixed)).toEqual(d('P', 3, false, 'limited', 0, 600, 600));
        await advance(600);
        expect(await s.consume('P', fixed, 1)).toEqual(d('P', 3, true, 'allowed', 2, 0, 1000));

        for (let i = 0; i < 4; i++) await s.consume('S', sliding, 1);
        await rewind(3_600_000);
        expect(await s.consume('S', sliding, 1)).toEqual(
          d('S', 4, false, 'limited', 0, 1250, 2000),
        );
        await advance(1250);
        expect(await s.consume('S', sliding, 1)).toEqual(d('S', 4, true, 'allowed', 0, 0, 1750));
        for (let i = 0; i < 4; i++) await s.consume('T', sliding, 1);
        await rewind(3_600_000);
        expect(await s.peek('T', sliding)).toEqual(d('T', 4, false, 'limited', 0, 1250, 2000));
        await advance(1250);
        expect(await s.consume('T', sliding, 1)).toEqual(d('T', 4, true, 'allowed', 0, 0, 1750));

        for (let i = 0; i < 5; i++) await s.consume('B', bucket, 1);
        await advance(100);
        await rewind(3_600_000);
        // No refill from a future `last`: the bucket refills from now on, and 200 ms is enough.
        expect(await s.peek('B', bucket)).toEqual(d('B', 5, false, 'limited', 0, 200, 1000));
        await advance(200);
        expect(await s.consume('B', bucket, 1)).toEqual(d('B', 5, true, 'allowed', 0, 0, 1000));
        await rewind(500);
        expect(await s.consume('B', bucket, 1)).toEqual(d('B', 5, false, 'limited', 0, 200, 1000));
      }));

    it('what has expired stays expired when the clock steps back', () =>
      withStore(async (s, advance, rewind) => {
        for (let i = 0; i < 3; i++) await s.consume('x', fixed, 1);
        await advance(1000);
        expect(await s.peek('x', fixed)).toEqual(d('x', 3, true, 'allowed', 3, 0, 0));
        await rewind(500);
        expect(await s.peek('x', fixed)).toEqual(d('x', 3, true, 'allowed', 3, 0, 0));
        expect(await s.consume('x', fixed, 1)).toEqual(d('x', 3, true, 'allowed', 2, 0, 1000));

        await s.recordFailure('f', failures);
        await advance(600);
        await s.recordFailure('f', failures);
        await advance(500);
        expect(await s.checkFailures('f', failures)).toEqual(d('f', 3, true, 'allowed', 2, 0, 500));
        // The first failure expired when read: stepping back does not make it count again.
        await rewind(500);
        expect(await s.checkFailures('f', failures)).toEqual(
          d('f', 3, true, 'allowed', 2, 0, 1000),
        );

        for (let i = 0; i < 3; i++) await s.recordFailure('l', failures);
        await advance(5000);
        expect(await s.checkFailures('l', failures)).toEqual(d('l', 3, true, 'allowed', 3, 0, 0));
        await rewind(2000);
        expect(await s.checkFailures('l', failures)).toEqual(d('l', 3, true, 'allowed', 3, 0, 0));
      }));

    it("a bucket met under a smaller rule holds at most that rule's capacity", () =>
      withStore(async (s) => {
        const big: WindowRule = { algorithm: 'token-bucket', limit: 10, windowMs: 1000 };
        expect(await s.consume('c', big, 1)).toEqual(d('c', 10, true, 'allowed', 9, 0, 100));
        expect(await s.peek('c', bucket)).toEqual(d('c', 5, true, 'allowed', 5, 0, 0));
        expect(await s.consume('c', bucket, 1)).toEqual(d('c', 5, true, 'allowed', 4, 0, 200));
      }));

    it('refund, fixed window: back into the window in force only, never below zero', () =>
      withStore(async (s, advance) => {
        expect(await s.consume('r', fixed, 1)).toEqual(d('r', 3, true, 'allowed', 2, 0, 1000));
        expect(await s.consume('r', fixed, 2)).toEqual(d('r', 3, true, 'allowed', 0, 0, 1000));
        expect(await s.consume('r', fixed, 1)).toEqual(d('r', 3, false, 'limited', 0, 1000, 1000));
        await advance(300);
        // Spent exactly when the window started: still this window's.
        await s.refund('r', fixed, 2, 300);
        expect(await s.peek('r', fixed)).toEqual(d('r', 3, true, 'allowed', 2, 0, 700));
        expect(await s.consume('r', fixed, 1)).toEqual(d('r', 3, true, 'allowed', 1, 0, 700));
        // Spent before this window started: nothing to give back here.
        await s.refund('r', fixed, 1, 301);
        expect(await s.peek('r', fixed)).toEqual(d('r', 3, true, 'allowed', 1, 0, 700));
        // More than was spent: the count stops at zero, the window gives no more than its limit.
        await s.refund('r', fixed, 5, 0);
        expect(await s.peek('r', fixed)).toEqual(d('r', 3, true, 'allowed', 3, 0, 700));
        expect(await s.consume('r', fixed, 3)).toEqual(d('r', 3, true, 'allowed', 0, 0, 700));
        expect(await s.consume('r', fixed, 1)).toEqual(d('r', 3, false, 'limited', 0, 700, 700));
        // A refund lifts a blocked window by exactly what it gives back.
        await s.refund('r', fixed, 1, 100);
        expect(await s.consume('r', fixed, 1)).toEqual(d('r', 3, true, 'allowed', 0, 0, 700));
        expect(await s.consume('r', fixed, 1)).toEqual(d('r', 3, false, 'limited', 0, 700, 700));
        // The window rolled: units of the old one are not given to the new one.
        await advance(700);
        await s.refund('r', fixed, 3, 700);
        expect(await s.consume('r', fixed, 1)).toEqual(d('r', 3, true, 'allowed', 2, 0, 1000));
        await advance(100);
        await s.refund('r', fixed, 1, 800);
        expect(await s.peek('r', fixed)).toEqual(d('r', 3, true, 'allowed', 2, 0, 900));
        await s.refund('r', fixed, 1, 100);
        expect(await s.peek('r', fixed)).toEqual(d('r', 3, true, 'allowed', 3, 0, 900));
      }));

    it('refund, sliding window: into the current window, else the previous one, else nowhere', () =>
      withStore(async (s, advance) => {
        expect(await s.consume('r', sliding, 3)).toEqual(d('r', 4, true, 'allowed', 1, 0, 2000));
        await advance(1200);
        // prev 3 × 800 + curr 1 × 1000 = 3400 of 4000.
        expect(await s.consume('r', sliding, 1)).toEqual(d('r', 4, true, 'allowed', 0, 0, 1800));
        expect(await s.consume('r', sliding, 1)).toEqual(d('r', 4, false, 'limited', 0, 134, 1800));
        await advance(50);
        // The current window started 250 ms ago: a spend 250 ms ago is its own.
        await s.refund('r', sliding, 1, 250);
        expect(await s.peek('r', sliding)).toEqual(d('r', 4, true, 'allowed', 1, 0, 750));
        // 251 ms ago is the previous window's, whose weight still counts.
        await s.refund('r', sliding, 1, 251);
        expect(await s.peek('r', sliding)).toEqual(d('r', 4, true, 'allowed', 2, 0, 750));
        // Before the previous window started: it weighs nothing, nothing is given back.
        await s.refund('r', sliding, 1, 1251);
        expect(await s.peek('r', sliding)).toEqual(d('r', 4, true, 'allowed', 2, 0, 750));
        await s.refund('r', sliding, 1, 1250);
        expect(await s.peek('r', sliding)).toEqual(d('r', 4, true, 'allowed', 3, 0, 750));
        // Never below zero, in either window.
        await s.refund('r', sliding, 9, 1000);
        await s.refund('r', sliding, 9, 0);
        expect(await s.peek('r', sliding)).toEqual(d('r', 4, true, 'allowed', 4, 0, 0));
        expect(await s.consume('r', sliding, 4)).toEqual(d('r', 4, true, 'allowed', 0, 0, 1750));
        expect(await s.consume('r', sliding, 1)).toEqual(
          d('r', 4, false, 'limited', 0, 1000, 1750),
        );
        // Rolled into a new window first: what was the current window is now the previous one.
        await advance(1000);
        await s.refund('r', sliding, 2, 1001);
        expect(await s.peek('r', sliding)).toEqual(d('r', 4, true, 'allowed', 2, 0, 750));
        // Expired: the key is absent, and a refund leaves it so.
        await advance(2000);
        await s.refund('r', sliding, 1, 0);
        expect(await s.peek('r', sliding)).toEqual(d('r', 4, true, 'allowed', 4, 0, 0));
        expect(await s.consume('r', sliding, 1)).toEqual(d('r', 4, true, 'allowed', 3, 0, 2000));
      }));

    it('refund, token bucket: tokens back whenever spent, never above a full bucket', () =>
      withStore(async (s, advance) => {
        expect(await s.consume('r', bucket, 4)).toEqual(d('r', 5, true, 'allowed', 1, 0, 800));
        await advance(100);
        // 1.5 tokens after the refill, 3.5 after the refund.
        await s.refund('r', bucket, 2, 100);
        expect(await s.peek('r', bucket)).toEqual(d('r', 5, true, 'allowed', 3, 0, 300));
        await s.refund('r', bucket, 9, 0);
        expect(await s.peek('r', bucket)).toEqual(d('r', 5, true, 'allowed', 5, 0, 0));
        expect(await s.consume('r', bucket, 5)).toEqual(d('r', 5, true, 'allowed', 0, 0, 1000));
        expect(await s.consume('r', bucket, 1)).toEqual(d('r', 5, false, 'limited', 0, 200, 1000));
        // Spent a minute ago and touched since: the refill replaced it long ago, nothing comes back.
        await s.refund('r', bucket, 1, 60_000);
        expect(await s.consume('r', bucket, 1)).toEqual(d('r', 5, false, 'limited', 0, 200, 1000));
      }));

    it('refund, token bucket: a unit the refill already replaced is never credited twice', () =>
      withStore(async (s, advance) => {
        const one: WindowRule = { algorithm: 'token-bucket', limit: 1, windowMs: 1000 };
        // A spends the only token; 1 s later the refill has replaced it and B spends it again.
        expect(await s.consume('o', one, 1)).toEqual(d('o', 1, true, 'allowed', 0, 0, 1000));
        await advance(1000);
        expect(await s.consume('o', one, 1)).toEqual(d('o', 1, true, 'allowed', 0, 0, 1000));
        // A's refund comes now: its unit is back already (B spent it), so nothing is given back.
        await s.refund('o', one, 1, 1000);
        expect(await s.consume('o', one, 1)).toEqual(d('o', 1, false, 'limited', 0, 1000, 1000));
        // Half refilled, then the refund of B's spend, untouched since: what it still takes (the
        // other half) comes back, a full bucket, as if B had never spent.
        await advance(500);
        await s.refund('o', one, 1, 500);
        expect(await s.peek('o', one)).toEqual(d('o', 1, true, 'allowed', 1, 0, 0));
        // Untouched since the spend: everything it still takes comes back.
        const five: WindowRule = { algorithm: 'token-bucket', limit: 5, windowMs: 1000 };
        expect(await s.consume('p', five, 3)).toEqual(d('p', 5, true, 'allowed', 2, 0, 600));
        await advance(100);
        await s.refund('p', five, 2, 100);
        expect(await s.peek('p', five)).toEqual(d('p', 5, true, 'allowed', 4, 0, 100));
      }));

    it('refund leaves absent keys, other algorithms and failure state alone', () =>
      withStore(async (s) => {
        for (const rule of [fixed, sliding, bucket]) await s.refund('none', rule, 1, 0);
        expect(await s.size()).toBe(0);
        expect(await s.consume('none', fixed, 1)).toEqual(
          d('none', 3, true, 'allowed', 2, 0, 1000),
        );

        expect(await s.consume('x', fixed, 3)).toEqual(d('x', 3, true, 'allowed', 0, 0, 1000));
        await s.refund('x', sliding, 3, 0);
        await s.refund('x', bucket, 3, 0);
        expect(await s.peek('x', fixed)).toEqual(d('x', 3, false, 'limited', 0, 1000, 1000));

        for (let i = 0; i < 3; i++) await s.recordFailure('L', failures);
        await s.recordFailure('G', failures);
        for (const rule of [fixed, sliding, bucket]) {
          await s.refund('L', rule, 3, 0);
          await s.refund('G', rule, 3, 0);
        }
        expect(await s.checkFailures('L', failures)).toEqual(
          d('L', 3, false, 'locked', 0, 5000, 5000),
        );
        expect(await s.checkFailures('G', failures)).toEqual(
          d('G', 3, true, 'allowed', 2, 0, 1000),
        );
      }));

    it('refund after the clock stepped back: it clamps (and keeps the clamp) like a peek', () =>
      withStore(async (s, advance, rewind) => {
        for (let i = 0; i < 3; i++) await s.consume('W', fixed, 1);
        await rewind(3_600_000);
        // The window now starts now: a spend before now is not its own, but the clamp stays.
        await s.refund('W', fixed, 1, 10);
        await advance(500);
        expect(await s.peek('W', fixed)).toEqual(d('W', 3, false, 'limited', 0, 500, 500));
        await s.refund('W', fixed, 1, 501);
        expect(await s.peek('W', fixed)).toEqual(d('W', 3, false, 'limited', 0, 500, 500));
        await s.refund('W', fixed, 1, 500);
        expect(await s.peek('W', fixed)).toEqual(d('W', 3, true, 'allowed', 1, 0, 500));
        for (let i = 0; i < 3; i++) await s.consume('V', fixed, 1);
        await rewind(3_600_000);
        await s.refund('V', fixed, 1, 0);
        expect(await s.peek('V', fixed)).toEqual(d('V', 3, true, 'allowed', 1, 0, 1000));

        for (let i = 0; i < 4; i++) await s.consume('S', sliding, 1);
        await rewind(3_600_000);
        await s.refund('S', sliding, 1, 5000);
        await advance(500);
        expect(await s.peek('S', sliding)).toEqual(d('S', 4, false, 'limited', 0, 750, 1500));
        await s.refund('S', sliding, 1, 500);
        expect(await s.peek('S', sliding)).toEqual(d('S', 4, true, 'allowed', 1, 0, 1500));

        for (let i = 0; i < 5; i++) await s.consume('B', bucket, 1);
        await advance(100);
        await rewind(3_600_000);
        // No refill from a future last refill; the refund alone comes back, and it refills from now.
        await s.refund('B', bucket, 1, 0);
        await advance(100);
        expect(await s.peek('B', bucket)).toEqual(d('B', 5, true, 'allowed', 1, 0, 700));
      }));

    it('refund of a window met under another windowMs: it runs to the end the new rule gives it', () =>
      withStore(async (s, advance) => {
        const short: WindowRule = { ...sliding, windowMs: 100 };
        expect(await s.consume('w', short, 1)).toEqual(d('w', 4, true, 'allowed', 3, 0, 200));
        // Spent before either window of the longer rule: nothing given back, but the state now
        // lasts two of its windows, as a consume under it would make it.
        await s.refund('w', sliding, 1, 5000);
        await advance(500);
        expect(await s.peek('w', sliding)).toEqual(d('w', 4, true, 'allowed', 3, 0, 1500));
        // A fixed window keeps its end: a refund only counts.
        const long: WindowRule = { ...fixed, windowMs: 3000 };
        expect(await s.consume('f', long, 2)).toEqual(d('f', 3, true, 'allowed', 1, 0, 3000));
        await s.refund('f', fixed, 1, 0);
        expect(await s.peek('f', fixed)).toEqual(d('f', 3, true, 'allowed', 2, 0, 1000));
        // Past the end the shorter rule gives the window: nothing is given back under it.
        await advance(1000);
        await s.refund('f', fixed, 1, 0);
        expect(await s.peek('f', long)).toEqual(d('f', 3, true, 'allowed', 2, 0, 2000));
      }));

    it('concurrent refunds and consumes lose no update', () =>
      withStore(async (s) => {
        const rule: WindowRule = { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 };
        await s.consume('burst', rule, 10);
        await Promise.all(Array.from({ length: 5 }, () => s.refund('burst', rule, 1, 0)));
        expect(await s.peek('burst', rule)).toEqual(d('burst', 10, true, 'allowed', 5, 0, 60_000));
        const calls: Promise<unknown>[] = [];
        const consumes: Promise<Decision>[] = [];
        for (let i = 0; i < 5; i++) {
          calls.push(Promise.resolve(s.refund('burst', rule, 1, 0)));
          const c = Promise.resolve(s.consume('burst', rule, 2));
          consumes.push(c);
          calls.push(c);
        }
        await Promise.all(calls);
        // In call order: each refund frees one, each consume takes two while they last.
        expect((await Promise.all(consumes)).map((x) => x.allowed)).toEqual([
          true,
          true,
          true,
          true,
          true,
        ]);
        expect(await s.peek('burst', rule)).toEqual(
          d('burst', 10, false, 'limited', 0, 60_000, 60_000),
        );
      }));

    it('a window call never erases failure state under its key: refused until that state ends', () =>
      withStore(async (s, advance) => {
        for (let i = 0; i < 3; i++) await s.recordFailure('lk', failures);
        for (const rule of [fixed, sliding, bucket]) {
          expect(await s.peek('lk', rule)).toEqual(
            d('lk', rule.limit, false, 'limited', 0, 5000, 5000),
          );
          expect(await s.consume('lk', rule, 1)).toEqual(
            d('lk', rule.limit, false, 'limited', 0, 5000, 5000),
          );
          await s.refund('lk', rule, 1, 0);
        }
        // The lockout is whole: same answer, same end.
        expect(await s.checkFailures('lk', failures)).toEqual(
          d('lk', 3, false, 'locked', 0, 5000, 5000),
        );
        // A failure log (no lockout yet) is kept the same way, until its last failure expires.
        await s.recordFailure('log', failures);
        await advance(400);
        expect(await s.consume('log', fixed, 1)).toEqual(
          d('log', 3, false, 'limited', 0, 600, 600),
        );
        expect(await s.checkFailures('log', failures)).toEqual(
          d('log', 3, true, 'allowed', 2, 0, 600),
        );
        await advance(600);
        expect(await s.consume('log', fixed, 1)).toEqual(d('log', 3, true, 'allowed', 2, 0, 1000));
        await advance(4000);
        expect(await s.checkFailures('lk', failures)).toEqual(d('lk', 3, true, 'allowed', 3, 0, 0));
        expect(await s.consume('lk', fixed, 1)).toEqual(d('lk', 3, true, 'allowed', 2, 0, 1000));
      }));

    it('ban and lockouts: a ban is a lockout by hand, listed with the earned ones, soonest end first', () =>
      withStore(async (s, advance, rewind) => {
        expect(typeof s.ban, 'Store.ban').toBe('function');
        expect(typeof s.lockouts, 'Store.lockouts').toBe('function');
        const ban = (key: string, ms: number) => s.ban?.(key, failures, ms);
        const list = async (prefix: string, limit = 10) =>
          ((await s.lockouts?.(prefix, limit, failures)) ?? []).map((l) => [
            l.key,
            l.retryAfterMs,
            l.ban,
          ]);
        for (let i = 0; i < 3; i++) await s.recordFailure('a:x:1', failures);
        await advance(100);
        expect(await ban('a:x:2', 60_000)).toEqual(
          d('a:x:2', 3, false, 'locked', 0, 60_000, 60_000),
        );
        expect(await ban('a:y:3', 2000)).toEqual(d('a:y:3', 3, false, 'locked', 0, 2000, 2000));
        await s.recordFailure('b:x:4', failures);
        expect(await list('a:')).toEqual([
          ['a:y:3', 2000, true],
          ['a:x:1', 4900, false],
          ['a:x:2', 60_000, true],
        ]);
        expect(await list('a:x:')).toEqual([
          ['a:x:1', 4900, false],
          ['a:x:2', 60_000, true],
        ]);
        expect(await list('a:', 1)).toEqual([['a:y:3', 2000, true]]);
        expect(await list('b:')).toEqual([]);
        // Refused like a lockout: failures neither count nor extend it, a success keeps it, and a
        // window call under its key is refused until it ends.
        expect(await s.recordFailure('a:x:2', failures)).toEqual(
          d('a:x:2', 3, false, 'locked', 0, 60_000, 60_000),
        );
        expect(await s.recordSuccess('a:x:2', failures)).toEqual(
          d('a:x:2', 3, false, 'locked', 0, 60_000, 60_000),
        );
        expect(await s.consume('a:x:2', fixed, 1)).toEqual(
          d('a:x:2', 3, false, 'limited', 0, 60_000, 60_000),
        );
        // Beyond lockoutMs it lasts its own length, also when the clock steps back. (The two that
        // have ended are read first: what has expired and was read stays expired.)
        await advance(10_000);
        for (const key of ['a:x:1', 'a:y:3'])
          expect(await s.checkFailures(key, failures)).toEqual(d(key, 3, true, 'allowed', 3, 0, 0));
        expect(await list('a:')).toEqual([['a:x:2', 50_000, true]]);
        expect(await s.checkFailures('a:x:2', failures)).toEqual(
          d('a:x:2', 3, false, 'locked', 0, 50_000, 50_000),
        );
        await rewind(100_000);
        expect(await s.checkFailures('a:x:2', failures)).toEqual(
          d('a:x:2', 3, false, 'locked', 0, 60_000, 60_000),
        );
        // A shorter ban keeps a longer lockout; a longer one replaces it; delete lifts either.
        for (let i = 0; i < 3; i++) await s.recordFailure('a:z:5', failures);
        expect(await ban('a:z:5', 1000)).toEqual(d('a:z:5', 3, false, 'locked', 0, 5000, 5000));
        expect(await list('a:z:')).toEqual([['a:z:5', 5000, false]]);
        expect(await ban('a:z:5', 7000)).toEqual(d('a:z:5', 3, false, 'locked', 0, 7000, 7000));
        expect(await list('a:z:')).toEqual([['a:z:5', 7000, true]]);
        await s.delete('a:z:5');
        expect(await list('a:z:')).toEqual([]);
        expect(await s.checkFailures('a:z:5', failures)).toEqual(
          d('a:z:5', 3, true, 'allowed', 3, 0, 0),
        );
        await advance(60_000);
        expect(await list('a:')).toEqual([]);
        expect(await s.checkFailures('a:x:2', failures)).toEqual(
          d('a:x:2', 3, true, 'allowed', 3, 0, 0),
        );
      }));

    it('lockouts lists only state stored locked: an ended lockout, failures since and a step back leave nothing listed, and nothing changed', () =>
      withStore(async (s, advance, rewind) => {
        const fewer: FailureRule = { ...failures, maxAttempts: 2 };
        expect(await s.ban?.('n:1', failures, 1000)).toEqual(
          d('n:1', 3, false, 'locked', 0, 1000, 1000),
        );
        await advance(1000);
        expect(await s.recordFailure('n:1', failures)).toEqual(
          d('n:1', 3, true, 'allowed', 2, 0, 1000),
        );
        expect(await s.recordFailure('n:1', failures)).toEqual(
          d('n:1', 3, true, 'allowed', 1, 0, 1000),
        );
        // Back before the ban's end: a store's record of it may still name the key, but the key
        // holds a failure log. Read under fewer attempts it would lock; a listing must not read it.
        await rewind(500);
        expect(await s.lockouts?.('n:', 10, fewer)).toEqual([]);
        expect(await s.checkFailures('n:1', failures)).toEqual(
          d('n:1', 3, true, 'allowed', 1, 0, 1000),
        );
      }));

    it('lockouts takes the soonest ends as they are: a lockout a listing shortened after a step back comes before a later ban', () =>
      withStore(async (s, _advance, rewind) => {
        const list = async (limit: number) =>
          ((await s.lockouts?.('o:', limit, failures)) ?? []).map((l) => [l.key, l.retryAfterMs]);
        for (let i = 0; i < 3; i++) await s.recordFailure('o:a', failures);
        await rewind(1000);
        // Read by the listing, clamped to lockoutMs from the new now: it ends 1 s sooner than it
        // was stored (a check clamps it the same way).
        expect(await list(10)).toEqual([['o:a', 5000]]);
        await s.ban?.('o:b', failures, 5500);
        expect(await list(1)).toEqual([['o:a', 5000]]);
        expect(await list(10)).toEqual([
          ['o:a', 5000],
          ['o:b', 5500],
        ]);
      }));

    it('delete forgets a key: window, bucket, history and lockout', () =>
      withStore(async (s) => {
        for (let i = 0; i < 3; i++) await s.recordFailure('x', failures);
        expect((await s.checkFailures('x', failures)).reason).toBe('locked');
        await s.delete('x');
        expect(await s.checkFailures('x', failures)).toEqual(d('x', 3, true, 'allowed', 3, 0, 0));
        for (let i = 0; i < 3; i++) await s.consume('y', fixed, 1);
        await s.delete('y');
        expect(await s.consume('y', fixed, 1)).toEqual(d('y', 3, true, 'allowed', 2, 0, 1000));
        await s.delete('never-seen');
      }));

    it('keys are independent', () =>
      withStore(async (s) => {
        for (let i = 0; i < 3; i++) await s.consume('a', fixed, 1);
        expect((await s.consume('a', fixed, 1)).allowed).toBe(false);
        expect(await s.consume('b', fixed, 1)).toEqual(d('b', 3, true, 'allowed', 2, 0, 1000));
        for (let i = 0; i < 3; i++) await s.recordFailure('a:f', failures);
        expect(await s.checkFailures('b:f', failures)).toEqual(
          d('b:f', 3, true, 'allowed', 3, 0, 0),
        );
      }));

    layerConformance(withStore);
    if (options.leases === false)
      it('leases: none (acquire and release both absent)', () =>
        withStore(async (s) => {
          expect([typeof s.acquire, typeof s.release]).toEqual(['undefined', 'undefined']);
        }));
    else leaseConformance(withStore);
    if (options.access === false)
      it('access lists: none (no access-list method)', () =>
        withStore(async (s) => {
          expect([typeof s.accessRules, typeof s.putAccessRule, typeof s.removeAccessRule]).toEqual(
            ['undefined', 'undefined', 'undefined'],
          );
        }));
    else accessConformance(withStore);

    it('concurrent calls never pass more than the limit', () =>
      withStore(async (s) => {
        const rule: WindowRule = { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 };
        const all = await Promise.all(
          Array.from({ length: 50 }, () => s.consume('burst', rule, 1)),
        );
        expect(all.filter((x) => x.allowed)).toHaveLength(10);
        const fails = await Promise.all(
          Array.from({ length: 20 }, () => s.recordFailure('burst-f', failures)),
        );
        expect(fails.filter((x) => x.allowed)).toHaveLength(2);
        expect(fails.filter((x) => (x as { lockoutStarted?: true }).lockoutStarted)).toHaveLength(
          1,
        );
      }));
  });
}
