import type {
  ConcurrencyLimiter,
  DecisionReason,
  FailureLimiter,
  WindowLimiter,
} from '@portcullis/core';

/** A limiter whose series `instrument()` exports from the start, at zero. */
export type KnownLimiter = FailureLimiter | WindowLimiter | ConcurrencyLimiter;

/** What a known limiter starts with: its name and the outcomes it counts. */
export interface KnownSeries {
  readonly name: string;
  /** The decision outcomes it exports at zero (those an unconfigured limiter of its kind gives). */
  readonly outcomes: readonly DecisionReason[];
  /** A failure limiter: its client-layer lockouts and lockouts in force start at zero too. */
  readonly locks: boolean;
}

const FAILURE_OUTCOMES: readonly DecisionReason[] = ['allowed', 'locked'];
const WINDOW_OUTCOMES: readonly DecisionReason[] = ['allowed', 'limited'];

/**
 * The series of `limiters`, checked: a failure limiter (it has `recordFailure`; named by
 * `config.name`), a window limiter (it has `consume`) or a concurrency limiter (it has `acquire`),
 * both named by `name`.
 */
export function knownSeries(
  limiters: unknown,
  fail: (expected: string) => never,
): readonly KnownSeries[] {
  if (!Array.isArray(limiters)) return fail('an array of failure, window or concurrency limiters');
  return limiters.map((limiter: unknown): KnownSeries => {
    const l = limiter as Partial<FailureLimiter> &
      Partial<WindowLimiter> &
      Partial<Pick<ConcurrencyLimiter, 'acquire'>>;
    if (typeof l?.recordFailure === 'function' && typeof l.config?.name === 'string')
      return { name: l.config.name, outcomes: FAILURE_OUTCOMES, locks: true };
    if (
      (typeof l?.consume === 'function' || typeof l?.acquire === 'function') &&
      typeof l.name === 'string'
    )
      return { name: l.name, outcomes: WINDOW_OUTCOMES, locks: false };
    return fail(
      'an array of failure, window or concurrency limiters (createFailureLimiter, createWindowLimiter, createConcurrencyLimiter)',
    );
  });
}
