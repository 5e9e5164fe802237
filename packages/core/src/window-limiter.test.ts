import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it, vi } from 'vitest';
import { MemoryStore } from './memory-store.js';
import { manualClock } from './testing/manual-clock.js';
import { createWindowLimiter, type WindowLimiterOptions } from './window-limiter.js';

describe('createWindowLimiter', () => {
  it('fixed window: limit+1 is refused until exactly the reset', async () => {
    const clock = manualClock(0);
    const l = createWindowLimiter({ limit: 2, windowMs: 10_000, clock, timers: clock });
    expect(l.consume('k')).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 10_000,
      key: 'k',
    });
    expect(l.consume('k')).toMatchObject({ allowed: true, remaining: 0 });
    clock.advance(9_999);
    expect(l.consume('k')).toEqual({
      allowed: false,
      reason: 'limited',
      limit: 2,
      remaining: 0,
      retryAfterMs: 1,
      resetMs: 1,
      key: 'k',
    });
    clock.advance(1);
    expect(l.consume('k')).toMatchObject({ allowed: true, remaining: 1, resetMs: 10_000 });
    expect(l.peek('k')).toMatchObject({ allowed: true, remaining: 1 });
    await l.reset('k');
    expect(l.peek('k')).toMatchObject({ remaining: 2, resetMs: 0 });
  });

  it('defaults to 60 per minute, fixed window', async () => {
    const l = createWindowLimiter();
    expect(l.rule).toEqual({ algorithm: 'fixed-window', limit: 60, windowMs: 60_000 });
    expect(l.name).toBe('default');
    await l.close();
  });

  it('validates cost per call', async () => {
    const l = createWindowLimiter({ limit: 5 });
    for (const cost of [0, -1, 1.5, Number.NaN, '2']) {
      expect(() => l.consume('k', cost as number)).toThrow(
        expect.objectContaining({ code: 'ERR_PORTCULLIS_COST' }),
      );
    }
    expect(l.consume('k', 5)).toMatchObject({ allowed: true, remaining: 0 });
    expect(() => l.consume(undefined as unknown as string)).toThrow(TypeError);
    await l.close();
  });

  it('dry run reports but never refuses; events are published for refusals', () => {
    const clock = manualClock(0);
    const seen: unknown[] = [];
    const listener = (m: unknown) => seen.push(m);
    subscribe('portcullis:limited', listener);
    try {
      const l = createWindowLimiter({
        limit: 1,
        windowMs: 1000,
        dryRun: true,
        name: 'api',
        clock,
        timers: clock,
      });
      expect(l.consume('k')).toMatchObject({ allowed: true, reason: 'allowed', dryRun: true });
      const d = l.consume('k');
      expect(d).toEqual({
        allowed: true,
        reason: 'limited',
        limit: 1,
        remaining: 0,
        retryAfterMs: 0,
        resetMs: 1000,
        key: 'k',
        dryRun: true,
      });
      expect(seen).toEqual([
        {
          limiter: 'api',
          decision: {
            allowed: false,
            reason: 'limited',
            limit: 1,
            remaining: 0,
            retryAfterMs: 1000,
            resetMs: 1000,
            key: 'k',
          },
        },
      ]);
    } finally {
      unsubscribe('portcullis:limited', listener);
    }
  });

  it('publishes a refusal on portcullis:limited whenever someone listens, and only then', () => {
    const clock = manualClock(0);
    const l = createWindowLimiter({ limit: 1, windowMs: 1000, name: 'hot', clock, timers: clock });
    expect(l.consume('k')).toMatchObject({ allowed: true });
    // Nobody listens: the refusal is returned as is.
    expect(l.consume('k')).toEqual({
      allowed: false,
      reason: 'limited',
      limit: 1,
      remaining: 0,
      retryAfterMs: 1000,
      resetMs: 1000,
      key: 'k',
    });
    const seen: unknown[] = [];
    const listener = (m: unknown) => seen.push(m);
    subscribe('portcullis:limited', listener);
    try {
      clock.advance(400);
      const d = l.consume('k');
      expect(d).toMatchObject({ allowed: false, reason: 'limited', retryAfterMs: 600 });
      expect(seen).toEqual([{ limiter: 'hot', decision: d }]);
    } finally {
      unsubscribe('portcullis:limited', listener);
    }
    l.consume('k');
    expect(seen).toHaveLength(1);
  });

  it('namespaces keys in a shared store by name', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const a = createWindowLimiter({ limit: 1, store, name: 'a' });
    const b = createWindowLimiter({ limit: 1, store, name: 'b' });
    expect(a.consume('k')).toMatchObject({ allowed: true, key: 'k' });
    expect(b.consume('k')).toMatchObject({ allowed: true, key: 'k' });
    expect(a.consume('k')).toMatchObject({ allowed: false, key: 'k' });
    expect(store.size()).toBe(2);
  });

  it.each([
    [{ limit: 0 }, 'ERR_PORTCULLIS_LIMIT'],
    [{ limit: 2.5 }, 'ERR_PORTCULLIS_LIMIT'],
    [{ windowMs: 0 }, 'ERR_PORTCULLIS_WINDOW_MS'],
    [{ windowMs: -1 }, 'ERR_PORTCULLIS_WINDOW_MS'],
    [{ algorithm: 'leaky-bucket' }, 'ERR_PORTCULLIS_ALGORITHM'],
    [{ dryRun: 1 }, 'ERR_PORTCULLIS_DRY_RUN'],
    [{ name: '' }, 'ERR_PORTCULLIS_NAME'],
    [{ limitt: 3 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
    [null, 'ERR_PORTCULLIS_INVALID_OPTIONS'],
  ])('rejects %j with %s', (options, code) => {
    expect(() => createWindowLimiter(options as WindowLimiterOptions)).toThrow(
      expect.objectContaining({ code }),
    );
  });
});

describe('createWindowLimiter: dry run and overflow', () => {
  it('peek in dry-run mode reports like consume: allowed, flagged, reason kept', () => {
    const clock = manualClock(0);
    const l = createWindowLimiter({ limit: 1, windowMs: 1000, dryRun: true, clock, timers: clock });
    l.consume('k');
    expect(l.peek('k')).toEqual({
      allowed: true,
      reason: 'limited',
      limit: 1,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1000,
      key: 'k',
      dryRun: true,
    });
  });

  it('warns once when a store full of blocked windows first refuses a new key', () => {
    const clock = manualClock(0);
    const warn = vi.fn();
    const l = createWindowLimiter({
      limit: 1,
      windowMs: 1000,
      maxEntries: 2,
      clock,
      timers: clock,
      logger: { warn, error: vi.fn() },
    });
    l.consume('a');
    l.consume('b');
    expect(l.consume('c')).toMatchObject({
      allowed: false,
      reason: 'overflow',
      retryAfterMs: 1000,
    });
    expect(l.consume('d')).toMatchObject({ reason: 'overflow' });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[0]).toMatchObject({
      code: 'PORTCULLIS_OVERFLOW',
      limiter: 'default',
    });
  });
});
