import type { Clock, TimerHandle, Timers } from '../clock.js';

/** A clock and timer set driven by hand: tests move time, nothing sleeps. */
export interface ManualClock extends Clock, Timers {
  /** Moves time forward by `ms`, running every timer that falls due, in due order. */
  advance(ms: number): void;
  /** Jumps to `ms` (running timers due by then when moving forward). */
  set(ms: number): void;
  /** Timers not yet run. */
  pendingTimers(): number;
}

interface Pending {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

/**
 * A manual clock that is also the timer implementation: pass it as both `clock` and `timers`.
 * @param startMs the initial time @default 0
 */
export function manualClock(startMs = 0): ManualClock {
  let now = startMs;
  let nextId = 1;
  let timers: Pending[] = [];

  function runUntil(target: number): void {
    for (;;) {
      let next: Pending | undefined;
      for (const t of timers)
        if (
          t.due <= target &&
          (next === undefined || t.due < next.due || (t.due === next.due && t.id < next.id))
        )
          next = t;
      if (next === undefined) break;
      const run = next;
      timers = timers.filter((t) => t !== run);
      if (run.due > now) now = run.due;
      run.fn();
    }
    now = target;
  }

  return {
    now: () => now,
    advance(ms: number): void {
      if (!Number.isFinite(ms) || ms < 0)
        throw new RangeError(`manualClock.advance: ms must be a finite number ≥ 0, got ${ms}`);
      runUntil(now + ms);
    },
    set(ms: number): void {
      if (ms >= now) runUntil(ms);
      else now = ms;
    },
    setTimeout(fn: () => void, ms: number): TimerHandle {
      const timer = { id: nextId++, due: now + Math.max(0, ms), fn };
      timers.push(timer);
      return timer.id;
    },
    clearTimeout(handle: TimerHandle): void {
      timers = timers.filter((t) => t.id !== handle);
    },
    pendingTimers: () => timers.length,
  };
}
