import type { Decision } from '../decision.js';

/** The decision a conformance test expects, in the order the suites write them. @internal */
export function d(
  key: string,
  limit: number,
  allowed: boolean,
  reason: Decision['reason'],
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
): Decision {
  return { allowed, reason, limit, remaining, retryAfterMs, resetMs, key };
}
