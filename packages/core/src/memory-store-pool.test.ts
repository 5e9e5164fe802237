/*
 * The memory store reuses the slot of a key that went (expired, deleted, evicted, forgotten after a
 * success) for the next new key, whatever its algorithm, and keeps a failure limiter's scopes in
 * tables of their own. These tests pin down that nothing leaks from one key to the next through a
 * reused slot, and that the tables share one bound and one eviction order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Decision } from './decision.js';
import { createFailureLimiter } from './failure-limiter.js';
import { MemoryStore } from './memory-store.js';
import type { Algorithm, FailureRule, WindowRule } from './store.js';
import { manualClock } from './testing/manual-clock.js';

const windowRules: Record<Algorithm, WindowRule> = {
  'fixed-window': { algorithm: 'fixed-window', limit: 3, windowMs: 1000 },
  'sliding-window': { algorithm: 'sliding-window', limit: 3, windowMs: 1000 },
  'token-bucket': { algorithm: 'token-bucket', limit: 3, windowMs: 1000 },
};
const failureRule: FailureRule = { maxAttempts: 3, windowMs: 1000, lockoutMs: 2000 };

/** Each key always goes with one kind of state, as a limiter's keys do. */
const keyKinds = ['fixed-window', 'sliding-window', 'token-bucket', 'failure', 'scoped'] as const;
type KeyKind = (typeof keyKinds)[number];

type Op =
  | { t: 'hit'; key: number; cost: number }
  | { t: 'peek'; key: number }
  | { t: 'refund'; key: number; ago: number }
  | { t: 'success'; key: number }
  | { t: 'delete'; key: number }
  | { t: 'advance'; ms: number };

const keyArb = fc.integer({ min: 0, max: 9 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('hit' as const),
      key: keyArb,
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('peek' as const), key: keyArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('refund' as const),
      key: keyArb,
      ago: fc.integer({ min: 0, max: 1500 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('success' as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), key: keyArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 2500 }), fc.constantFrom(1000, 2000)),
    }),
  },
);

function kindOf(key: number): KeyKind {
  return keyKinds[key % keyKinds.length] as KeyKind;
}

/** Applies one op to `store` (the key's own kind decides which call it is). */
function apply(store: MemoryStore, key: number, op: Op): Decision | undefined {
  // Half the keys are IPv4 addresses, which the store keeps in its number table, half are not.
  const name = key % 2 === 0 ? `192.0.2.${key}` : `k${key}`;
  const kind = kindOf(key);
  const scoped = kind === 'scoped' ? store.failureTable('login') : undefined;
  if (kind === 'scoped' && scoped === undefined) throw new Error('no failure table');
  const failures = scoped ?? store;
  switch (op.t) {
    case 'hit':
      if (kind === 'failure' || kind === 'scoped') return failures.recordFailure(name, failureRule);
      return store.consume(name, windowRules[kind], op.cost);
    case 'peek':
      if (kind === 'failure' || kind === 'scoped') return failures.checkFailures(name, failureRule);
      return store.peek(name, windowRules[kind]);
    case 'refund':
      if (kind !== 'failure' && kind !== 'scoped') store.refund(name, windowRules[kind], 1, op.ago);
      return undefined;
    case 'success':
      if (kind === 'failure' || kind === 'scoped') return failures.recordSuccess(name, failureRule);
      return undefined;
    case 'delete':
      failures.delete(name);
      return undefined;
    default:
      return undefined;
  }
}

describe('MemoryStore slot reuse', () => {
  it('one store for many keys of every kind answers exactly as one fresh store per key', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 150 }), (ops) => {
        const clock = manualClock(1_000_000);
        const shared = new MemoryStore({ clock, timers: clock });
        const own = new Map<number, MemoryStore>();
        const ownStore = (key: number) => {
          let s = own.get(key);
          if (s === undefined) {
            s = new MemoryStore({ clock, timers: clock });
            own.set(key, s);
          }
          return s;
        };
        for (const op of ops) {
          if (op.t === 'advance') {
            clock.advance(op.ms);
            // The sweep drops expired slots into the pool, ready for the next new key.
            shared.sweep();
            continue;
          }
          expect(apply(shared, op.key, op)).toEqual(apply(ownStore(op.key), op.key, op));
        }
        shared.close();
        for (const s of own.values()) s.close();
      }),
      { numRuns: 400 },
    );
  });

  it('a reused slot starts clean whatever it held before', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxEntries: 1, clock, timers: clock });
    const fixed = windowRules['fixed-window'];
    // Two failures in one slot, then evicted by a window key: the window starts full.
    store.recordFailure('f', failureRule);
    store.recordFailure('f', failureRule);
    expect(store.consume('w', fixed, 1)).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 3,
      remaining: 2,
      retryAfterMs: 0,
      resetMs: 1000,
      key: 'w',
    });
    // A failure key now takes the window's slot: its log is empty.
    expect(store.recordFailure('g', failureRule)).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 3,
      remaining: 2,
      retryAfterMs: 0,
      resetMs: 1000,
      key: 'g',
    });
    expect(store.checkFailures('f', failureRule)).toMatchObject({ remaining: 3, resetMs: 0 });
    expect(store.size()).toBe(1);
  });
});

describe('failure tables', () => {
  it('keep scopes apart that a joined key would confuse, in one bound and one eviction order', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxEntries: 3, clock, timers: clock });
    const a = store.failureTable('a');
    const ab = store.failureTable('a:b');
    if (a === undefined || ab === undefined) throw new Error('no failure table');
    // `a` + `b:x` and `a:b` + `x` would both be `a:b:x` as one joined key.
    a.recordFailure('b:x', failureRule);
    a.recordFailure('b:x', failureRule);
    expect(ab.recordFailure('x', failureRule)).toMatchObject({ remaining: 2 });
    expect(store.recordFailure('a:b:x', failureRule)).toMatchObject({ remaining: 2 });
    expect(store.size()).toBe(3);
    // Full: the next new key evicts the oldest of all tables (a's `b:x`).
    clock.advance(1);
    ab.recordFailure('y', failureRule);
    expect(a.checkFailures('b:x', failureRule)).toMatchObject({ remaining: 3 });
    expect(store.size()).toBe(3);
  });

  it('show their keys as <name>:<key> to status pages', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const login = store.failureTable('login');
    if (login === undefined) throw new Error('no failure table');
    for (let i = 0; i < 3; i++) login.recordFailure('10.0.0.1', failureRule);
    clock.advance(500);
    expect([...store.protectedKeys()]).toEqual([
      { key: 'login:10.0.0.1', kind: 'failure', untilMs: 1500 },
    ]);
  });

  it('let a status page delete keys while it walks the protected ones', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const login = store.failureTable('login');
    if (login === undefined) throw new Error('no failure table');
    for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3'])
      for (let i = 0; i < 3; i++) login.recordFailure(ip, failureRule);
    const seen: string[] = [];
    for (const p of store.protectedKeys()) {
      seen.push(p.key);
      login.delete(p.key.slice('login:'.length)); // an "unlock all"
    }
    expect(seen).toEqual(['login:10.0.0.1', 'login:10.0.0.2', 'login:10.0.0.3']);
    expect([...store.protectedKeys()]).toEqual([]);
    expect(store.size()).toBe(0);
  });

  it('are handed out for 64 names; past that the caller prefixes keys itself', () => {
    const store = new MemoryStore();
    for (let i = 0; i < 64; i++) expect(store.failureTable(`s${i}`)).toBeDefined();
    expect(store.failureTable('s64')).toBeUndefined();
    expect(store.failureTable('s0')).toBe(store.failureTable('s0'));
    // A failure limiter with more scopes than that still counts every scope on its own.
    const limiter = createFailureLimiter({ maxAttempts: 2 });
    for (let i = 0; i < 70; i++) limiter.recordFailure('10.0.0.1', `scope-${i}`);
    for (let i = 0; i < 70; i++)
      expect(limiter.check('10.0.0.1', `scope-${i}`)).toMatchObject({ remaining: 1 });
    expect(limiter.recordFailure('10.0.0.1', 'scope-69')).toMatchObject({ reason: 'locked' });
    expect(limiter.size()).toBe(70);
  });
});
