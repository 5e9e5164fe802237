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

/**
 * A `rateLimit` middleware's `charge` (docs/design.md#charge-after): a handler that learns what
 * its request cost before the response ends (tokens streamed so far, bytes read) spends it now.
 * `On` is what the framework calls its request (Express `req`, Koa `ctx`, Fastify `request`, Hono
 * `c`); `Rest`, the further arguments its client address needs (Fetch: the handler's own).
 */
export interface ChargeControl<On, Rest extends unknown[] = []> {
  /**
   * Spends `units` (a non-negative integer) more of the request's budgets, where its up-front
   * units went; a request `rateLimit` did not count (`skip`, an access rule) is charged nothing.
   * Resolves to the units spent in its own budget: what was left, when fewer were, so the next
   * request is refused until the window has room again.
   */
  charge(on: On, units: number, ...rest: Rest): Promise<number>;
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
