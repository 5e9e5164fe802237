/** A value that is either ready now or arrives later. The in-memory store always answers now. */
export type MaybePromise<T> = T | Promise<T>;

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

/** True when `value` is a thenable; lets callers stay synchronous on the memory fast path. */
export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Applies `fn` to a value that may or may not be a promise, staying synchronous when it can. */
export function mapMaybe<T, R>(
  value: MaybePromise<T>,
  fn: (resolved: T) => MaybePromise<R>,
): MaybePromise<R> {
  return isPromise(value) ? value.then(fn) : fn(value);
}
