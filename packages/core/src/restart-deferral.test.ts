import { describe, expect, it } from 'vitest';
import { PortcullisConfigError } from './errors.js';
import { createRestartScheduler, type RestartSchedulerOptions } from './restart-scheduler.js';
import { type ManualClock, manualClock } from './testing/manual-clock.js';

interface Logged {
  level: 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string | undefined;
}

/** A scheduler on a manual clock that records when (clock ms) each restart ran and what it logged. */
function setup(options: Partial<RestartSchedulerOptions> = {}) {
  const clock: ManualClock = manualClock(0);
  const restarts: { at: number; reasons: readonly string[] }[] = [];
  const logged: Logged[] = [];
  const scheduler = createRestartScheduler({
    onRestart: (event) => {
      restarts.push({ at: clock.now(), reasons: event.reasons });
    },
    clock,
    timers: clock,
    logger: {
      warn: (obj, msg) => logged.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
      error: (obj, msg) =>
        logged.push({ level: 'error', obj: obj as Record<string, unknown>, msg }),
    },
    ...options,
  });
  return { clock, scheduler, restarts, logged, at: () => restarts.map((r) => r.at) };
}

/** The log line of a restart that stopped waiting after `ms`. */
const gaveUp = (ms: number) => [
  'warn',
  `Portcullis: work still in flight after ${ms} ms; restarting anyway (deferralTimeoutMs)`,
];

describe('createRestartScheduler: pendingWork deferral', () => {
  it('a due restart waits while work is in flight, asking every deferralPollMs', () => {
    let inFlight = 2;
    const asked: number[] = [];
    const { clock, scheduler, at } = setup({
      pendingWork: () => {
        asked.push(clock.now());
        return inFlight;
      },
    });
    expect(scheduler.request({ reason: 'deploy' })).toEqual({
      coalesced: false,
      delayMs: 2_000,
      cooldownMsApplied: 0,
    });
    clock.advance(1_999);
    expect(asked).toEqual([]);
    clock.advance(1); // t = 2 000: due, 2 in flight
    expect(asked).toEqual([2_000]);
    expect(at()).toEqual([]);
    expect(scheduler.pending()).toEqual({ dueInMs: 0, reasons: ['deploy'], deferred: true });
    clock.advance(1_200); // t = 3 200: asked at 2 500 and 3 000
    inFlight = 0;
    expect(at()).toEqual([]);
    clock.advance(300); // t = 3 500: the next poll finds nothing in flight
    expect(asked).toEqual([2_000, 2_500, 3_000, 3_500]);
    expect(at()).toEqual([3_500]);
    expect(scheduler.pending()).toBeUndefined();
    expect(scheduler.lastRestartAt()).toBe(3_500);
  });

  it('restarts at once when nothing is in flight (0 or less)', () => {
    const { clock, scheduler, at } = setup({ pendingWork: () => 0 });
    scheduler.request({ delayMs: 100 });
    clock.advance(100);
    expect(at()).toEqual([100]);
    const negative = setup({ pendingWork: () => -1 });
    negative.scheduler.request({ delayMs: 100 });
    negative.clock.advance(100);
    expect(negative.at()).toEqual([100]);
  });

  it('waits at most deferralTimeoutMs, then restarts anyway with one warning', () => {
    const { clock, scheduler, at, logged } = setup({
      pendingWork: () => 1,
      deferralPollMs: 400,
      deferralTimeoutMs: 1_000,
    });
    scheduler.request({ delayMs: 0 });
    clock.advance(999);
    expect(at()).toEqual([]);
    clock.advance(1); // polls at 400 and 800, the last at the deadline: 1 000
    expect(at()).toEqual([1_000]);
    expect(logged).toEqual([
      {
        level: 'warn',
        obj: { code: 'PORTCULLIS_RESTART_DEFERRAL_TIMEOUT', waitedMs: 1_000 },
        msg: 'Portcullis: work still in flight after 1000 ms; restarting anyway (deferralTimeoutMs)',
      },
    ]);
  });

  it('the default timeout is 300 000 ms and the default poll 500 ms', () => {
    let asked = 0;
    const { clock, scheduler, at } = setup({
      pendingWork: () => {
        asked++;
        return 5;
      },
    });
    scheduler.request({ delayMs: 0 });
    clock.advance(299_999);
    expect(at()).toEqual([]);
    expect(asked).toBe(600); // t = 0, 500, …, 299 500
    clock.advance(1);
    expect(at()).toEqual([300_000]);
  });

  it('a check that throws counts as unknown: the restart keeps waiting, logged once', () => {
    const boom = new Error('probe failed');
    let broken = true;
    const { clock, scheduler, at, logged } = setup({
      pendingWork: () => {
        if (broken) throw boom;
        return 0;
      },
    });
    scheduler.request({ delayMs: 50 });
    clock.advance(50);
    expect(at()).toEqual([]);
    expect(scheduler.pending()).toEqual({ dueInMs: 0, reasons: [], deferred: true });
    clock.advance(1_000); // two more polls, both failing: still one log line
    expect(at()).toEqual([]);
    expect(logged).toEqual([
      {
        level: 'error',
        obj: { err: boom },
        msg: 'Portcullis: pendingWork threw; the restart keeps waiting',
      },
    ]);
    broken = false;
    clock.advance(500); // the poll at 1 550 finds nothing in flight
    expect(at()).toEqual([1_550]);
  });

  it('a check that keeps throwing is still bounded by deferralTimeoutMs', () => {
    const { clock, scheduler, at, logged } = setup({
      pendingWork: () => {
        throw new Error('down');
      },
      deferralTimeoutMs: 2_000,
    });
    scheduler.request({ delayMs: 0 });
    clock.advance(1_999);
    expect(at()).toEqual([]);
    clock.advance(1);
    expect(at()).toEqual([2_000]);
    expect(logged.map((l) => [l.level, l.msg])).toEqual([
      ['error', 'Portcullis: pendingWork threw; the restart keeps waiting'],
      gaveUp(2000),
    ]);
    // The next restart's wait logs a failing check again.
    clock.advance(30_000);
    scheduler.request({ delayMs: 0 });
    clock.advance(0);
    expect(logged.map((l) => [l.level, l.msg])[2]).toEqual([
      'error',
      'Portcullis: pendingWork threw; the restart keeps waiting',
    ]);
  });

  it.each([
    ['a string', '3'],
    ['undefined', undefined],
    ['NaN', Number.NaN],
  ])('a check that returns %s counts as unknown and keeps waiting', (_label, value) => {
    const { clock, scheduler, at, logged } = setup({
      pendingWork: () => value as unknown as number,
      deferralTimeoutMs: 1_000,
    });
    scheduler.request({ delayMs: 10 });
    clock.advance(10);
    expect(at()).toEqual([]);
    clock.advance(1_000);
    expect(at()).toEqual([1_010]);
    expect(logged.map((l) => [l.level, l.msg])).toEqual([
      ['error', 'Portcullis: pendingWork returned no number; the restart keeps waiting'],
      gaveUp(1000),
    ]);
  });

  it('skipDeferral: true restarts when due without asking pendingWork', () => {
    let asked = 0;
    const { clock, scheduler, at, logged } = setup({ pendingWork: () => ++asked });
    scheduler.request({ delayMs: 100, skipDeferral: true });
    clock.advance(100);
    expect(at()).toEqual([100]);
    expect(asked).toBe(0);
    expect(logged).toEqual([]);
    // It held for that restart only: the next one waits for work again.
    scheduler.request({ delayMs: 0 });
    clock.advance(30_000);
    expect(at()).toEqual([100]);
    expect(asked).toBe(1);
  });

  it('a skipDeferral request joining a pending restart makes it skip the wait', () => {
    const { clock, scheduler, at } = setup({ pendingWork: () => 5 });
    scheduler.request({ delayMs: 1_000, reason: 'a' });
    expect(scheduler.request({ delayMs: 5_000, reason: 'b', skipDeferral: true })).toEqual({
      coalesced: true,
      delayMs: 1_000,
      cooldownMsApplied: 0,
    });
    clock.advance(1_000);
    expect(at()).toEqual([1_000]);
  });

  it('a skipDeferral request ends a wait under way, after its own delay', () => {
    const { clock, scheduler, restarts } = setup({ pendingWork: () => 5 });
    scheduler.request({ delayMs: 0, reason: 'a' });
    clock.advance(2_000);
    expect(scheduler.pending()).toMatchObject({ deferred: true });
    expect(scheduler.request({ delayMs: 300, reason: 'now', skipDeferral: true })).toEqual({
      coalesced: true,
      delayMs: 300,
      cooldownMsApplied: 0,
    });
    expect(scheduler.pending()).toEqual({ dueInMs: 300, reasons: ['a', 'now'] });
    clock.advance(300);
    expect(restarts).toEqual([{ at: 2_300, reasons: ['a', 'now'] }]);
  });

  it('skipDeferral: false, or a request without it, leaves a wait as it is', () => {
    const { clock, scheduler, at } = setup({ pendingWork: () => 5, deferralTimeoutMs: 10_000 });
    scheduler.request({ delayMs: 0 });
    clock.advance(1_000);
    scheduler.request({ delayMs: 0, skipDeferral: false });
    clock.advance(8_999);
    expect(at()).toEqual([]);
    clock.advance(1);
    expect(at()).toEqual([10_000]);
  });

  it.each([['true'], [1], [null]])('skipDeferral %j is refused with a TypeError', (value) => {
    const { scheduler } = setup();
    expect(() => scheduler.request({ skipDeferral: value as unknown as boolean })).toThrow(
      new TypeError(`Portcullis: restart skipDeferral must be a boolean, got ${typeof value}`),
    );
    expect(scheduler.pending()).toBeUndefined();
  });

  it('a request during the deferral joins it; the cooldown counts from the real restart', () => {
    let inFlight = 1;
    const { clock, scheduler, restarts } = setup({ pendingWork: () => inFlight });
    scheduler.request({ delayMs: 1_000, reason: 'first' });
    clock.advance(1_500); // due at 1 000, deferred
    expect(scheduler.request({ delayMs: 0, reason: 'second' })).toEqual({
      coalesced: true,
      delayMs: 0,
      cooldownMsApplied: 0,
    });
    inFlight = 0;
    clock.advance(500); // the poll at 2 000
    expect(restarts).toEqual([{ at: 2_000, reasons: ['first', 'second'] }]);
    // 30 s cooldown from 2 000, not from 1 000.
    expect(scheduler.request({ delayMs: 0, reason: 'third' })).toEqual({
      coalesced: false,
      delayMs: 30_000,
      cooldownMsApplied: 30_000,
    });
    clock.advance(30_000);
    expect(restarts.map((r) => r.at)).toEqual([2_000, 32_000]);
  });

  it('deferralTimeoutMs 0 never waits (and never asks)', () => {
    let asked = 0;
    const { clock, scheduler, at, logged } = setup({
      pendingWork: () => ++asked,
      deferralTimeoutMs: 0,
    });
    scheduler.request({ delayMs: 5 });
    clock.advance(5);
    expect(at()).toEqual([5]);
    expect(asked).toBe(0);
    expect(logged).toEqual([]);
  });

  it('close() during a deferral cancels the restart and stops polling', () => {
    let asked = 0;
    const { clock, scheduler, at } = setup({
      pendingWork: () => {
        asked++;
        return 1;
      },
    });
    scheduler.request({ delayMs: 0 });
    expect(asked).toBe(0);
    clock.advance(0);
    expect(asked).toBe(1);
    scheduler.close();
    expect(scheduler.pending()).toBeUndefined();
    clock.advance(600_000);
    expect(asked).toBe(1);
    expect(at()).toEqual([]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it.each([
    [{ pendingWork: 3 }, 'ERR_PORTCULLIS_PENDING_WORK', 'pendingWork'],
    [{ deferralPollMs: 0 }, 'ERR_PORTCULLIS_DEFERRAL_POLL_MS', 'deferralPollMs'],
    [{ deferralPollMs: 2.5 }, 'ERR_PORTCULLIS_DEFERRAL_POLL_MS', 'deferralPollMs'],
    [{ deferralPollMs: 2 ** 31 }, 'ERR_PORTCULLIS_DEFERRAL_POLL_MS', 'deferralPollMs'],
    [{ deferralTimeoutMs: -1 }, 'ERR_PORTCULLIS_DEFERRAL_TIMEOUT_MS', 'deferralTimeoutMs'],
    [{ deferralTimeoutMs: Number.NaN }, 'ERR_PORTCULLIS_DEFERRAL_TIMEOUT_MS', 'deferralTimeoutMs'],
    [{ deferralTimeoutMs: '500' }, 'ERR_PORTCULLIS_DEFERRAL_TIMEOUT_MS', 'deferralTimeoutMs'],
  ])('refuses %j with %s', (bad, code, option) => {
    let thrown: unknown;
    try {
      createRestartScheduler({ onRestart: () => {}, ...(bad as object) });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PortcullisConfigError);
    expect(thrown).toMatchObject({ code, option });
  });
});
