/*
 * A bad clock and bad numbers: a clock that steps back must never lengthen a wait, and values that
 * Node timers or double arithmetic cannot hold are refused at construction, never fired early.
 */
import {
  createFailureLimiter,
  createRestartScheduler,
  createSessionCreationLimiter,
  createWindowLimiter,
  MemoryStore,
  PortcullisConfigError,
  type RestartEvent,
} from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { describe, expect, it } from 'vitest';

const HOUR = 3_600_000;

describe('restart scheduler and a clock that steps back', () => {
  it('the cooldown never grows beyond cooldownMs', () => {
    const clock = manualClock(10 * HOUR);
    const events: RestartEvent[] = [];
    const scheduler = createRestartScheduler({
      onRestart: (e) => {
        events.push(e);
      },
      clock,
      timers: clock,
    });
    scheduler.request({ delayMs: 0 });
    clock.advance(0);
    expect(events).toHaveLength(1);
    clock.set(9 * HOUR); // one hour back
    const attempt = scheduler.request({ delayMs: 0, reason: 'after the step' });
    expect(attempt).toEqual({ coalesced: false, delayMs: 30_000, cooldownMsApplied: 30_000 });
    expect(scheduler.pending()?.dueInMs).toBe(30_000);
    clock.advance(30_000);
    expect(events).toHaveLength(2);
  });

  it('a pending restart is never reported further away than maxDelayMs + cooldownMs', () => {
    const clock = manualClock(10 * HOUR);
    const scheduler = createRestartScheduler({ onRestart: () => {}, clock, timers: clock });
    scheduler.request({ delayMs: 60_000 });
    clock.set(9 * HOUR);
    expect(scheduler.pending()?.dueInMs).toBe(90_000);
    expect(scheduler.request({ delayMs: 1_000 }).delayMs).toBe(1_000);
  });
});

describe('restart reasons are bounded', () => {
  it('100 000 requests with 1 KB reasons keep 32 reasons of at most 256 characters', () => {
    const clock = manualClock(0);
    const events: RestartEvent[] = [];
    const scheduler = createRestartScheduler({
      onRestart: (e) => {
        events.push(e);
      },
      clock,
      timers: clock,
    });
    const reason = 'x'.repeat(1024);
    for (let i = 0; i < 100_000; i++) scheduler.request({ reason });
    expect(scheduler.pending()?.reasons).toHaveLength(32);
    clock.advance(2_000);
    expect(events).toHaveLength(1);
    const event = events[0] as RestartEvent;
    expect(event.reasons).toHaveLength(32);
    expect(event.reasons[0]).toBe(`${'x'.repeat(255)}…`);
    expect(event.droppedReasons).toBe(99_968);
  });

  it('a reason that is not a string is refused', () => {
    const scheduler = createRestartScheduler({ onRestart: () => {} });
    expect(() => scheduler.request({ reason: { toString: () => 'x' } as never })).toThrow(
      TypeError,
    );
    scheduler.close();
  });
});

describe('values timers and doubles cannot hold are refused', () => {
  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(PortcullisConfigError);
      return (error as PortcullisConfigError).code;
    }
    return 'no error';
  };

  it.each([
    ['cooldownMs', { cooldownMs: 2 ** 32 }, 'ERR_PORTCULLIS_COOLDOWN_MS'],
    ['maxDelayMs', { maxDelayMs: 2 ** 31 }, 'ERR_PORTCULLIS_MAX_DELAY_MS'],
    ['defaultDelayMs', { defaultDelayMs: 2 ** 31 }, 'ERR_PORTCULLIS_DEFAULT_DELAY_MS'],
    ['the sum', { maxDelayMs: 2 ** 31 - 100, cooldownMs: 30_000 }, 'ERR_PORTCULLIS_MAX_DELAY_MS'],
  ])('restart scheduler: %s', (_name, options, expected) => {
    expect(code(() => createRestartScheduler({ onRestart: () => {}, ...options }))).toBe(expected);
  });

  it('the longest delay a timer holds still works and never fires early', () => {
    const clock = manualClock(0);
    let fired = 0;
    const scheduler = createRestartScheduler({
      onRestart: () => {
        fired++;
      },
      maxDelayMs: 2 ** 31 - 1 - 30_000,
      clock,
      timers: clock,
    });
    scheduler.request({ delayMs: 2 ** 40 });
    clock.advance(2 ** 31 - 30_002);
    expect(fired).toBe(0);
    clock.advance(1);
    expect(fired).toBe(1);
  });

  it.each([
    ['lockoutMs', () => createFailureLimiter({ lockoutMs: 2 ** 53 }), 'ERR_PORTCULLIS_LOCKOUT_MS'],
    ['windowMs', () => createFailureLimiter({ windowMs: 1e16 }), 'ERR_PORTCULLIS_WINDOW_MS'],
    [
      'window limiter windowMs',
      () => createWindowLimiter({ windowMs: 2 ** 50 }),
      'ERR_PORTCULLIS_WINDOW_MS',
    ],
    [
      'limit × windowMs',
      () => createWindowLimiter({ algorithm: 'token-bucket', limit: 2 ** 30, windowMs: 2 ** 30 }),
      'ERR_PORTCULLIS_LIMIT',
    ],
    [
      'session windowMs',
      () => createSessionCreationLimiter({ windowMs: 2 ** 60 }),
      'ERR_PORTCULLIS_WINDOW_MS',
    ],
  ])('%s beyond exact arithmetic', (_name, make, expected) => {
    expect(code(make)).toBe(expected);
  });

  it('a token bucket at the largest exact span allows exactly its limit', () => {
    const clock = manualClock(1_700_000_000_000);
    const windowMs = 315_360_000_000; // ten years, the longest span accepted
    const limiter = createWindowLimiter({
      algorithm: 'token-bucket',
      limit: 3,
      windowMs,
      store: new MemoryStore({ clock, timers: clock }),
    });
    const allowed = [1, 2, 3, 4].map(() => limiter.consume('k').allowed);
    expect(allowed).toEqual([true, true, true, false]);
  });
});

describe('limiters and a clock that steps back an hour', () => {
  it('a lockout never waits longer than lockoutMs, and waiting retryAfterMs is enough', () => {
    const clock = manualClock(10 * HOUR);
    const limiter = createFailureLimiter({ maxAttempts: 2, clock, timers: clock });
    limiter.recordFailure('203.0.113.1');
    limiter.recordFailure('203.0.113.1');
    clock.set(9 * HOUR);
    const locked = limiter.check('203.0.113.1');
    expect(locked).toMatchObject({ reason: 'locked', retryAfterMs: 300_000 });
    clock.advance(300_000);
    expect(limiter.check('203.0.113.1').allowed).toBe(true);
  });

  it('an exhausted window and the session limit wait at most windowMs', () => {
    const clock = manualClock(10 * HOUR);
    const window = createWindowLimiter({ limit: 1, windowMs: 60_000, clock, timers: clock });
    window.consume('k');
    const sessions = createSessionCreationLimiter({ limit: 1, windowMs: 10_000, clock });
    sessions.consume('session/new');
    clock.set(9 * HOUR);
    expect(window.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
    expect(() => sessions.consume('session/new')).toThrow(
      'ACP session creation rate limit exceeded for session/new; retry after 10s.',
    );
    clock.advance(60_000);
    expect(window.consume('k').allowed).toBe(true);
    sessions.consume('session/new');
  });
});
