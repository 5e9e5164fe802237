import { describe, expect, it, vi } from 'vitest';
import { createRestartScheduler } from './restart-scheduler.js';
import { createSessionCreationLimiter } from './session-creation.js';
import { manualClock } from './testing/manual-clock.js';

describe('createSessionCreationLimiter (120 / 10 s per instance)', () => {
  it('lets 120 through and refuses the 121st with the exact message', () => {
    const clock = manualClock(0);
    const limiter = createSessionCreationLimiter({ clock });
    for (let i = 0; i < 120; i++) {
      limiter.consume('session/new');
      clock.advance(10);
    }
    clock.advance(3_800); // t = 5 000
    expect(() => limiter.consume('session/new')).toThrow(
      new Error('ACP session creation rate limit exceeded for session/new; retry after 5s.'),
    );
    let error: unknown;
    try {
      limiter.consume('session/load');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    expect(Object.keys(error as object)).toEqual([]);
    clock.advance(4_999);
    expect(() => limiter.consume('x')).toThrow('retry after 1s.');
    clock.advance(1);
    expect(() => limiter.consume('x')).not.toThrow();
    expect(limiter.peek()).toMatchObject({ remaining: 119, resetMs: 10_000 });
  });

  it('a new instance starts fresh', () => {
    const clock = manualClock(0);
    const a = createSessionCreationLimiter({ limit: 1, clock });
    a.consume('m');
    expect(() => a.consume('m')).toThrow();
    const b = createSessionCreationLimiter({ limit: 1, clock });
    expect(() => b.consume('m')).not.toThrow();
  });

  it('validates options', () => {
    expect(() => createSessionCreationLimiter({ limit: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMIT' }),
    );
    expect(() => createSessionCreationLimiter({ every: 1 } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_UNKNOWN_OPTION' }),
    );
  });
});

describe('createRestartScheduler', () => {
  function setup() {
    const clock = manualClock(0);
    const onRestart = vi.fn();
    const scheduler = createRestartScheduler({ onRestart, clock, timers: clock });
    return { clock, onRestart, scheduler };
  }

  it('coalesces requests into one pending restart', () => {
    const { clock, onRestart, scheduler } = setup();
    expect(scheduler.request({ reason: 'config.apply' })).toEqual({
      coalesced: false,
      delayMs: 2_000,
      cooldownMsApplied: 0,
    });
    clock.advance(500);
    expect(scheduler.request({ reason: 'plugins.install' })).toEqual({
      coalesced: true,
      delayMs: 1_500,
      cooldownMsApplied: 0,
    });
    expect(scheduler.request({ delayMs: 10_000 })).toEqual({
      coalesced: true,
      delayMs: 1_500,
      cooldownMsApplied: 0,
    });
    clock.advance(1_499);
    expect(onRestart).not.toHaveBeenCalled();
    clock.advance(1);
    expect(onRestart).toHaveBeenCalledTimes(1);
    expect(onRestart).toHaveBeenCalledWith({
      reasons: ['config.apply', 'plugins.install'],
      droppedReasons: 0,
    });
    expect(scheduler.lastRestartAt()).toBe(2_000);
  });

  it('adds the cooldown on top of the requested delay; never rejects during it', () => {
    const { clock, onRestart, scheduler } = setup();
    scheduler.request({ delayMs: 0 });
    clock.advance(0);
    expect(onRestart).toHaveBeenCalledTimes(1);
    clock.advance(10_000);
    expect(scheduler.request({})).toEqual({
      coalesced: false,
      delayMs: 22_000,
      cooldownMsApplied: 20_000,
    });
    clock.advance(21_999);
    expect(onRestart).toHaveBeenCalledTimes(1);
    clock.advance(1);
    expect(onRestart).toHaveBeenCalledTimes(2);
    clock.advance(30_000);
    expect(scheduler.request({ delayMs: 0 })).toEqual({
      coalesced: false,
      delayMs: 0,
      cooldownMsApplied: 0,
    });
  });

  it('an earlier request pulls a pending restart forward; delays are clamped to [0, 60 s]', () => {
    const { clock, onRestart, scheduler } = setup();
    expect(scheduler.request({ delayMs: 600_000 })).toEqual({
      coalesced: false,
      delayMs: 60_000,
      cooldownMsApplied: 0,
    });
    clock.advance(1_000);
    expect(scheduler.request({ delayMs: 5_000 })).toEqual({
      coalesced: true,
      delayMs: 5_000,
      cooldownMsApplied: 0,
    });
    expect(scheduler.pending()).toEqual({ dueInMs: 5_000, reasons: [] });
    clock.advance(5_000);
    expect(onRestart).toHaveBeenCalledTimes(1);
    expect(clock.pendingTimers()).toBe(0);
    expect(scheduler.request({ delayMs: -5 })).toEqual({
      coalesced: false,
      delayMs: 30_000,
      cooldownMsApplied: 30_000,
    });
    expect(() => scheduler.request({ delayMs: Number.NaN })).toThrow(TypeError);
  });

  it('logs a failing restart instead of losing it', async () => {
    const clock = manualClock(0);
    const error = vi.fn();
    const scheduler = createRestartScheduler({
      onRestart: () => Promise.reject(new Error('boom')),
      clock,
      timers: clock,
      logger: { warn: vi.fn(), error },
    });
    scheduler.request({ delayMs: 0 });
    clock.advance(0);
    await Promise.resolve();
    await Promise.resolve();
    expect(error).toHaveBeenCalledWith({ err: new Error('boom') }, 'Portcullis: restart failed');
  });

  it('requires onRestart and validates numbers', () => {
    expect(() => createRestartScheduler({} as never)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_ON_RESTART' }),
    );
    expect(() => createRestartScheduler({ onRestart: () => {}, cooldownMs: -1 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_COOLDOWN_MS' }),
    );
  });
});

describe('createSessionCreationLimiter: dry run', () => {
  it('never throws in dry-run mode and logs what it would have refused', () => {
    const clock = manualClock(0);
    const warn = vi.fn();
    const limiter = createSessionCreationLimiter({
      limit: 1,
      clock,
      timers: clock,
      dryRun: true,
      logger: { warn, error: vi.fn() },
    });
    limiter.consume('session/new');
    expect(() => limiter.consume('session/new')).not.toThrow();
    expect(warn).toHaveBeenCalledWith(
      { code: 'SESSION_RATE_LIMITED', method: 'session/new', retryAfterMs: 10_000, dryRun: true },
      'ACP session creation rate limit exceeded for session/new; retry after 10s. (dry run)',
    );
  });
});
