import { safeLogger } from './safe-call.js';
import {
  fixedWindowConsume,
  fixedWindowPeek,
  fixedWindowRoll,
  type FixedWindowState,
} from './algorithms/fixed-window.js';
import { type Clock, systemClock, type Timers } from './clock.js';
import type { Decision } from './decision.js';
import { sessionRateLimitMessage } from './error-shapes.js';
import type { Logger } from './events.js';
import { boolean, duration, integer, parseOptions, withMethods } from './options.js';
import type { WindowRule } from './store.js';

/** Options of {@link createSessionCreationLimiter}. */
export interface SessionCreationLimiterOptions {
  /** New sessions per window. @default 120 */
  limit?: number;
  /** Window length. @default 10_000 */
  windowMs?: number;
  /** Time source. @default systemClock */
  clock?: Clock;
  /** Accepted like every limiter's; this one sets no timers. */
  timers?: Timers;
  /** Count as usual, but never throw: a would-be refusal is only logged. @default false */
  dryRun?: boolean;
  /** Receives a warning for each refusal in dry-run mode. */
  logger?: Logger;
}

/** One fixed window per instance; the state dies with the instance. */
export interface SessionCreationLimiter {
  /**
   * Spends one session creation for `method`, or throws an `Error` whose message is exactly
   * `ACP session creation rate limit exceeded for <method>; retry after <n>s.` (no retry field).
   */
  consume(method: string): void;
  /** The current budget, without spending. */
  peek(): Decision;
  /** Starts a fresh window. */
  reset(): void;
}

/**
 * The checks of {@link createSessionCreationLimiter}'s options, for a wrapper that takes the same
 * options and hands them on (`@portcullis/rpc`'s `withSessionCreationLimit`).
 */
export const sessionCreationLimiterSpec = Object.freeze({
  limit: integer(1),
  windowMs: duration(1),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
  dryRun: boolean,
  logger: withMethods<Logger>('warn', 'error'),
});

/**
 * Creates the session-creation limiter (docs/design.md#session-creation): 120 new sessions per 10 s per instance by
 * default, as a fixed window anchored at the first creation. Re-opening a known session must not
 * call `consume` (see `@portcullis/rpc`'s `withSessionCreationLimit`).
 */
export function createSessionCreationLimiter(
  options?: SessionCreationLimiterOptions,
): SessionCreationLimiter {
  const o = parseOptions(options, sessionCreationLimiterSpec, 'createSessionCreationLimiter');
  const rule: WindowRule = {
    algorithm: 'fixed-window',
    limit: o.limit ?? 120,
    windowMs: o.windowMs ?? 10_000,
  };
  const clock = o.clock ?? systemClock;
  const dryRun = o.dryRun ?? false;
  const logger = safeLogger(o.logger);
  let state: FixedWindowState | undefined;
  return {
    consume(method: string): void {
      const now = clock.now();
      const next = fixedWindowRoll(state, now, rule);
      const d = fixedWindowConsume(next, now, rule, 1, 'session-creation');
      state = next;
      if (d.allowed) return;
      const message = sessionRateLimitMessage(method, d.retryAfterMs);
      if (!dryRun) throw new Error(message);
      logger?.warn(
        { code: 'SESSION_RATE_LIMITED', method, retryAfterMs: d.retryAfterMs, dryRun },
        `${message} (dry run)`,
      );
    },
    peek: () => fixedWindowPeek(state, clock.now(), rule, 'session-creation'),
    reset(): void {
      state = undefined;
    },
  };
}
