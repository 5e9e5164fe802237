/** A source of wall-clock time in milliseconds. Injected everywhere so tests never sleep. */
export interface Clock {
  /** Current time in milliseconds. */
  now(): number;
}

/** An opaque handle returned by {@link Timers.setTimeout}. */
export type TimerHandle = unknown;

/** The two timer functions Portcullis needs; injected so a manual clock can fire them. */
export interface Timers {
  /** Runs `fn` once after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer made by {@link Timers.setTimeout}. */
  clearTimeout(handle: TimerHandle): void;
}

/** The system clock (`Date.now()`). The only place in Portcullis that reads it. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/**
 * The system timers. Every timer is `unref()`ed: a rate limiter must never keep a process alive.
 */
export const systemTimers: Timers = Object.freeze({
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle = setTimeout(fn, ms);
    handle.unref?.();
    return handle;
  },
  clearTimeout(handle: TimerHandle): void {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
});
