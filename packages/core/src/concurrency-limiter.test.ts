import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createConcurrencyLimiter, type Lease } from './concurrency-limiter.js';
import { channels } from './events.js';
import { MemoryStore } from './memory-store.js';
import type { LeaseAnswer, LeaseRule, Store } from './store.js';
import { manualClock } from './testing/manual-clock.js';

function limiter(max: number, extra: { leaseMs?: number; dryRun?: boolean } = {}) {
  const clock = manualClock(1_000_000);
  const store = new MemoryStore({ clock, timers: clock });
  return {
    clock,
    store,
    l: createConcurrencyLimiter({ max, store, clock, timers: clock, ...extra }),
  };
}

const sync = (x: unknown) => x as Lease;

describe('createConcurrencyLimiter', () => {
  it('decides with exact fields: max in flight, the next refused with retryAfterMs', () => {
    const { l } = limiter(2);
    const a = sync(l.acquire('k'));
    const b = sync(l.acquire('k'));
    const c = sync(l.acquire('k'));
    expect(a.decision).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 0,
      key: 'k',
    });
    expect(b.decision.remaining).toBe(0);
    expect(c.decision).toEqual({
      allowed: false,
      reason: 'limited',
      limit: 2,
      remaining: 0,
      retryAfterMs: 1000,
      resetMs: 1000,
      key: 'k',
    });
    c.release();
    expect(sync(l.acquire('k')).decision.allowed).toBe(false);
    a.release();
    a.release();
    expect(sync(l.acquire('k')).decision.allowed).toBe(true);
    expect(sync(l.acquire('k')).decision.allowed).toBe(false);
  });

  it('a slot held past leaseMs is renewed by its heartbeat; a released one is not', () => {
    const { l, clock } = limiter(1, { leaseMs: 3000 });
    const a = sync(l.acquire('k'));
    clock.advance(3000 * 10);
    expect(sync(l.acquire('k')).decision.allowed).toBe(false);
    a.release();
    expect(clock.pendingTimers()).toBe(0);
    const b = sync(l.acquire('k'));
    expect(b.decision.allowed).toBe(true);
    b.release();
  });

  it('a holder that stops renewing (a crashed process) loses its slot after leaseMs', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const rule: LeaseRule = { max: 1, leaseMs: 3000 };
    // The crashed process: a lease taken straight in the shared store, never renewed.
    store.acquire('default:k', rule, 'dead');
    const l = createConcurrencyLimiter({ max: 1, leaseMs: 3000, store, clock, timers: clock });
    expect(sync(l.acquire('k')).decision.allowed).toBe(false);
    clock.advance(2999);
    expect(sync(l.acquire('k')).decision.allowed).toBe(false);
    clock.advance(1);
    expect(sync(l.acquire('k')).decision.allowed).toBe(true);
  });

  it('dry run: a refusal is allowed and flagged, and holds nothing', () => {
    const { l } = limiter(1, { dryRun: true });
    sync(l.acquire('k'));
    const over = sync(l.acquire('k'));
    expect(over.decision).toMatchObject({ allowed: true, reason: 'limited', dryRun: true });
  });

  it('publishes refusals on portcullis:limited', () => {
    const { l } = limiter(1);
    const seen: unknown[] = [];
    const listener = (m: unknown) => seen.push(m);
    channels.limited.subscribe(listener);
    try {
      sync(l.acquire('k'));
      sync(l.acquire('k'));
    } finally {
      channels.limited.unsubscribe(listener);
    }
    expect(seen).toEqual([
      { limiter: 'default', decision: expect.objectContaining({ reason: 'limited', key: 'k' }) },
    ]);
  });

  it('a long key is bounded, as in every limiter', () => {
    const { l } = limiter(1);
    const long = 'x'.repeat(10_000);
    const a = sync(l.acquire(long));
    expect(a.decision.key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(sync(l.acquire(long)).decision.allowed).toBe(false);
    expect(sync(l.acquire(`${long}y`)).decision.allowed).toBe(true);
  });

  it('a store answering later (a shared one) gives promises; a failed renewal fails nothing', async () => {
    const clock = manualClock(0);
    const inner = new MemoryStore({ clock, timers: clock });
    let failRenewals = false;
    const store: Store = Object.assign(Object.create(inner) as Store, {
      acquire: (key: string, rule: LeaseRule, lease: string): Promise<LeaseAnswer> =>
        failRenewals
          ? Promise.reject(new Error('down'))
          : Promise.resolve(inner.acquire(key, rule, lease)),
      release: (key: string, lease: string) => Promise.resolve(inner.release(key, lease)),
    });
    const l = createConcurrencyLimiter({ max: 1, leaseMs: 300, store, clock, timers: clock });
    const a = await l.acquire('k');
    expect(a.decision.allowed).toBe(true);
    failRenewals = true;
    clock.advance(100);
    await Promise.resolve();
    await Promise.resolve();
    // The heartbeat goes on after a failed renewal.
    expect(clock.pendingTimers()).toBe(1);
    a.release();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('refuses bad options with a code', () => {
    const bad: [unknown, string][] = [
      [{}, 'ERR_PORTCULLIS_MAX'],
      [{ max: 0 }, 'ERR_PORTCULLIS_MAX'],
      [{ max: 1.5 }, 'ERR_PORTCULLIS_MAX'],
      [{ max: '2' }, 'ERR_PORTCULLIS_MAX'],
      [{ max: 1, leaseMs: 2 }, 'ERR_PORTCULLIS_LEASE_MS'],
      [{ max: 1, retryAfterMs: -1 }, 'ERR_PORTCULLIS_RETRY_AFTER_MS'],
      [{ max: 1, store: { consume() {} } }, 'ERR_PORTCULLIS_STORE'],
      [{ max: 1, name: 'a"b' }, 'ERR_PORTCULLIS_NAME'],
      [{ max: 1, maxEntries: 5, store: new MemoryStore() }, 'ERR_PORTCULLIS_MAX_ENTRIES'],
      [{ max: 1, maxInFlight: 5 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
    ];
    for (const [options, code] of bad)
      expect(
        () => createConcurrencyLimiter(options as never),
        JSON.stringify(options),
      ).toThrowError(expect.objectContaining({ code }));
  });

  it('never holds more than max, whatever the order of acquires and releases', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.oneof(fc.constant('take' as const), fc.nat(9)), { maxLength: 60 }),
        (max, ops) => {
          const { l } = limiter(max);
          const held: Lease[] = [];
          for (const op of ops) {
            if (op === 'take') {
              const lease = sync(l.acquire('k'));
              expect(lease.decision.allowed).toBe(held.length < max);
              if (lease.decision.allowed) held.push(lease);
            } else if (held.length > 0) {
              held.splice(op % held.length, 1)[0]?.release();
            }
          }
        },
      ),
    );
  });
});
