import type { Decision } from '@portcullis/core';

const decisions = new WeakMap<Request, Decision>();

/** Records the `rateLimit` decision of a request (the last limiter's, when several ran). */
export function exposeDecision(request: Request, decision: Decision): void {
  decisions.set(request, decision);
}

/**
 * The `rateLimit` decision of a request, for the handler a `rateLimit` wrapped (a Fetch request
 * has no place of its own for it); `undefined` when skipped or not limited.
 */
export function decisionOf(request: Request): Decision | undefined {
  return decisions.get(request);
}
