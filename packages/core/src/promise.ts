// Values that are ready now or arrive later: the in-memory store answers synchronously, a shared
// store with promises, and every caller stays synchronous when it can.

/** A value that is either ready now or arrives later. The in-memory store always answers now. */
export type MaybePromise<T> = T | Promise<T>;

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
