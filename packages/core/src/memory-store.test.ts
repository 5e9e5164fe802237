import { describe, expect, it } from 'vitest';
import { PortcullisConfigError } from './errors.js';
import { createFailureLimiter } from './failure-limiter.js';
import { MemoryStore } from './memory-store.js';
import type { FailureRule, WindowRule } from './store.js';
import { manualClock } from './testing/manual-clock.js';
import { createWindowLimiter } from './window-limiter.js';

const rule: WindowRule = { algorithm: 'fixed-window', limit: 2, windowMs: 1000 };

describe('MemoryStore bounds', () => {
  it('evicts expired entries first, then the oldest unprotected one', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxEntries: 3, clock, timers: clock });
    store.consume('old', rule, 1);
    clock.advance(500);
    store.consume('mid', rule, 1);
    store.consume('new', rule, 1);
    clock.advance(500); // `old` has expired, the others have not
    store.consume('x', rule, 1);
    expect(store.size()).toBe(3);
    expect(store.peek('mid', rule)).toMatchObject({ remaining: 1 });
    store.consume('y', rule, 1); // nothing expired: the oldest (`mid`) goes
    expect(store.peek('mid', rule)).toMatchObject({ remaining: 2, resetMs: 0 });
    expect(store.peek('new', rule)).toMatchObject({ remaining: 1 });
    expect(store.size()).toBe(3);
  });

  it('never evicts a blocked window; refuses new keys with overflow while all are blocked', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxEntries: 2, clock, timers: clock });
    for (const k of ['a', 'b']) {
      store.consume(k, rule, 2);
    }
    clock.advance(300);
    expect(store.consume('c', rule, 1)).toEqual({
      allowed: false,
      reason: 'overflow',
      limit: 2,
      remaining: 0,
      retryAfterMs: 700,
      resetMs: 700,
      key: 'c',
    });
    expect(store.consume('a', rule, 1)).toMatchObject({ reason: 'limited', retryAfterMs: 700 });
    store.delete('b');
    expect(store.consume('c', rule, 1)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('runs one unref-able sweep timer that drops expired keys and stops on close', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ sweepIntervalMs: 5000, clock, timers: clock });
    for (let i = 0; i < 50; i++) store.consume(`k${i}`, rule, 1);
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(5000);
    expect(store.size()).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
    store.consume('again', rule, 1);
    expect(clock.pendingTimers()).toBe(1);
    store.close();
    expect(clock.pendingTimers()).toBe(0);
    expect(store.size()).toBe(0);
  });

  it('the system timers are unref()ed so a limiter never holds the process open', () => {
    const store = new MemoryStore();
    store.consume('k', rule, 1);
    const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
    const refed = handles.filter(
      (h) =>
        (h as { hasRef?: () => boolean }).hasRef?.() && (h as { _onTimeout?: unknown })._onTimeout,
    );
    expect(refed).toHaveLength(0);
    store.close();
  });

  it('flood: 1 000 000 unique subjects through a 10 000-entry failure limiter keep the old lockout', () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ clock, timers: clock });
    for (let i = 0; i < 10; i++) limiter.recordFailure('203.0.113.200');
    expect(limiter.check('203.0.113.200')).toMatchObject({
      allowed: false,
      reason: 'locked',
      retryAfterMs: 300_000,
    });
    let max = 0;
    for (let i = 0; i < 1_000_000; i++) {
      limiter.recordFailure(`10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`);
      if ((i & 1023) === 0) {
        clock.advance(1);
        max = Math.max(max, limiter.size() as number);
      }
    }
    expect(limiter.size()).toBeLessThanOrEqual(10_000);
    expect(max).toBeLessThanOrEqual(10_000);
    expect(limiter.check('203.0.113.200')).toMatchObject({
      allowed: false,
      reason: 'locked',
      retryAfterMs: 300_000 - 977,
    });
  });

  it('a blocked window survives a flood of other keys', () => {
    const clock = manualClock(0);
    const limiter = createWindowLimiter({ limit: 3, windowMs: 60_000, clock, timers: clock });
    for (let i = 0; i < 3; i++) limiter.consume('victim');
    for (let i = 0; i < 50_000; i++) limiter.consume(`spray-${i}`);
    expect(limiter.consume('victim')).toMatchObject({ allowed: false, reason: 'limited' });
    expect(limiter.size()).toBeLessThanOrEqual(10_000);
  });
});

describe('MemoryStore rules', () => {
  it('a key met again under a shorter window rolls by that window, as the algorithm says', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    store.consume('k', { algorithm: 'fixed-window', limit: 1, windowMs: 10_000 }, 1);
    clock.advance(2_000);
    const short: WindowRule = { algorithm: 'fixed-window', limit: 1, windowMs: 1_000 };
    expect(store.consume('k', short, 1)).toMatchObject({
      allowed: true,
      remaining: 0,
      resetMs: 1_000,
    });
  });
});

describe('MemoryStore eviction order', () => {
  it('drops an expired key before any live one, however recently it last swept', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxEntries: 2, clock, timers: clock });
    const short: WindowRule = { algorithm: 'fixed-window', limit: 5, windowMs: 100 };
    const long: WindowRule = { algorithm: 'fixed-window', limit: 5, windowMs: 10_000 };
    store.consume('a-live', long, 1);
    store.consume('b-short', short, 1);
    store.consume('c-new', long, 1); // full, nothing expired: the oldest (a-live) goes
    expect(store.peek('a-live', long)).toMatchObject({ remaining: 5, resetMs: 0 });
    clock.advance(100); // b-short has expired, a few ms after the last sweep
    store.consume('d-new', long, 1);
    expect(store.peek('c-new', long)).toMatchObject({ remaining: 4 });
    expect(store.size()).toBe(2);
  });
});

describe('MemoryStore keys (IPv4 addresses in a number table, every other key in a Map)', () => {
  it('keeps spellings of one address that are not canonical apart, each a key of its own', () => {
    const store = new MemoryStore();
    const spellings = ['10.0.0.1', '010.0.0.1', '10.0.0.01', '::ffff:10.0.0.1', '10.0.0.1 '];
    spellings.forEach((key, i) => {
      for (let n = 0; n <= i; n++) store.consume(key, rule, 1);
    });
    // One call on the first key, two on the second, …: only a shared bucket would mix them up.
    expect(spellings.map((key) => store.peek(key, rule).remaining)).toEqual([1, 0, 0, 0, 0]);
    expect(store.consume('10.0.0.1', rule, 1)).toMatchObject({ allowed: true, remaining: 0 });
    expect(store.size()).toBe(5);
  });

  it('evicts IPv4 and other keys in one order, oldest first, whatever table holds them', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxEntries: 3, clock, timers: clock });
    const long: WindowRule = { algorithm: 'fixed-window', limit: 5, windowMs: 10_000 };
    for (const key of ['192.0.2.1', 'user:ann', '255.255.255.255']) store.consume(key, long, 1);
    store.consume('0.0.0.0', long, 1); // the oldest, 192.0.2.1, goes
    store.consume('user:bob', long, 1); // then user:ann
    expect(store.peek('192.0.2.1', long)).toMatchObject({ remaining: 5, resetMs: 0 });
    expect(store.peek('user:ann', long)).toMatchObject({ remaining: 5, resetMs: 0 });
    for (const key of ['255.255.255.255', '0.0.0.0', 'user:bob'])
      expect(store.peek(key, long)).toMatchObject({ remaining: 4, resetMs: 10_000 });
    store.delete('255.255.255.255');
    expect(store.peek('255.255.255.255', long)).toMatchObject({ remaining: 5, resetMs: 0 });
    expect(store.size()).toBe(2);
  });
});

describe('MemoryStore timer options', () => {
  it.each([2 ** 31, 2 ** 32, Number.MAX_SAFE_INTEGER])(
    'refuses sweepIntervalMs %d: a Node timer cannot wait that long and would fire after 1 ms',
    (sweepIntervalMs) => {
      expect(() => new MemoryStore({ sweepIntervalMs })).toThrow(
        expect.objectContaining({
          name: 'PortcullisConfigError',
          code: 'ERR_PORTCULLIS_SWEEP_INTERVAL_MS',
          option: 'sweepIntervalMs',
        }),
      );
      expect(() => new MemoryStore({ sweepIntervalMs })).toThrow(PortcullisConfigError);
    },
  );

  it('accepts 2^31 − 1 and arms the sweep for exactly that long, never earlier', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ sweepIntervalMs: 2 ** 31 - 1, clock, timers: clock });
    store.consume('k', rule, 1);
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(2 ** 31 - 2);
    expect(clock.pendingTimers()).toBe(1);
    expect(store.size()).toBe(1);
    clock.advance(1);
    expect(clock.pendingTimers()).toBe(0);
    expect(store.size()).toBe(0);
    store.close();
  });
});

describe('MemoryStore when the clock steps back', () => {
  const once: FailureRule = { maxAttempts: 1, windowMs: 1000, lockoutMs: 5000 };

  it('a store full of lockouts clamps them too: the overflow wait never exceeds lockoutMs, no lockout is evicted', () => {
    const clock = manualClock(10_000_000);
    const store = new MemoryStore({ maxEntries: 2, clock, timers: clock });
    store.recordFailure('a', once);
    store.recordFailure('b', once);
    clock.advance(1000);
    expect(store.recordFailure('c', once)).toEqual({
      allowed: false,
      reason: 'overflow',
      limit: 1,
      remaining: 0,
      retryAfterMs: 4000,
      resetMs: 4000,
      key: 'c',
    });
    clock.set(clock.now() - 3_600_000);
    expect(store.recordFailure('c', once)).toMatchObject({
      reason: 'overflow',
      retryAfterMs: 5000,
      resetMs: 5000,
    });
    expect([...store.protectedKeys()]).toEqual([
      { key: 'a', kind: 'failure', untilMs: 5000 },
      { key: 'b', kind: 'failure', untilMs: 5000 },
    ]);
    clock.advance(4999);
    expect(store.checkFailures('c', once)).toMatchObject({ reason: 'overflow', retryAfterMs: 1 });
    expect(store.checkFailures('a', once)).toMatchObject({ reason: 'locked', retryAfterMs: 1 });
    clock.advance(1);
    expect(store.recordFailure('c', once)).toMatchObject({
      reason: 'locked',
      retryAfterMs: 5000,
      lockoutStarted: true,
    });
    // The ended lockouts were swept to make room.
    expect(store.size()).toBe(1);
  });

  it('a blocked window stamped in the future blocks for at most one window from the step', () => {
    const clock = manualClock(10_000_000);
    const store = new MemoryStore({ maxEntries: 1, clock, timers: clock });
    store.consume('w', rule, 2);
    clock.set(clock.now() - 3_600_000);
    expect(store.consume('x', rule, 1)).toMatchObject({ reason: 'overflow', retryAfterMs: 1000 });
    clock.advance(1000);
    expect(store.consume('x', rule, 1)).toMatchObject({ reason: 'allowed', remaining: 1 });
  });
});
