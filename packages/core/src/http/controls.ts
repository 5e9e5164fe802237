import type { FailureLimiter, FailureLimiterReconfig } from '../failure-limiter.js';
import type { MaybePromise } from '../promise.js';
import type { WindowLimiter, WindowLimiterReconfig } from '../window-limiter.js';

/** What a mounted `rateLimit` middleware offers its owner: live numbers and its limiter. */
export interface RequestLimitControls {
  /** Changes the numbers in force without a restart (counts kept). */
  reconfigure(partial: WindowLimiterReconfig): void;
  /** The window limiter behind the middleware (`peek`, `reset`, …). */
  readonly limiter: WindowLimiter;
  /**
   * Stops what the middleware built (the store's sweep timer); a `limiter` or `store` you passed
   * is yours to close. Call it when the app shuts down or the middleware is replaced.
   */
  close(): MaybePromise<void>;
}

/** What a mounted auth or webhook guard offers its owner: live numbers and its limiter. */
export interface FailureLimitControls {
  /** Changes the numbers in force without a restart (history and earned lockouts kept). */
  reconfigure(partial: FailureLimiterReconfig): void;
  /** The failure limiter behind the guard (`check`, `reset`, …). */
  readonly limiter: FailureLimiter;
  /**
   * Closes the limiters the guard built (their stores' sweep timers); a `limiter` or
   * `browserLimiter` you passed is yours to close.
   */
  close(): MaybePromise<void>;
}

/**
 * Hangs the controls on a middleware function, as express-rate-limit hangs `resetKey` on its
 * middleware: whoever mounted it can still reach its limiter.
 */
export function withControls<F extends object, C extends object>(fn: F, controls: C): F & C {
  return Object.assign(fn, controls);
}
