import type { FailureKeys } from './failure-keys.js';
import type { FailureLimiterReconfig } from './failure-limiter.js';
import { failureLimiterSpec, failureRule } from './failure-options.js';
import { restampStore } from './limiter-store.js';
import { parseOptions } from './options.js';
import { withoutUndefined } from './without-undefined.js';

const failureReconfigureSpec = {
  maxAttempts: failureLimiterSpec.maxAttempts,
  windowMs: failureLimiterSpec.windowMs,
  lockoutMs: failureLimiterSpec.lockoutMs,
  exemptLoopback: failureLimiterSpec.exemptLoopback,
  dryRun: failureLimiterSpec.dryRun,
};

/**
 * Puts `partial`'s numbers in force on the limiter on `keys` (see `FailureLimiter.reconfigure`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function reconfigureFailures(keys: FailureKeys, partial: FailureLimiterReconfig): void {
  const p = parseOptions(partial, failureReconfigureSpec, 'reconfigure');
  const { config, escalate, store, namespace, logger } = keys.setup;
  // The stores read every number from the call's rule: history and lockouts are kept and judged
  // by the new numbers from the next call on (see FailureLimiter.reconfigure).
  Object.assign(config, withoutUndefined(p));
  const before = keys.rule;
  keys.rule = failureRule(config, escalate);
  // A failure log expires by the window it was stamped under: re-stamped under the new one, so
  // that a widened window keeps counting an attacker's failures (and counts none that had
  // already expired).
  if (before.windowMs !== keys.rule.windowMs)
    restampStore(store, namespace, before, keys.rule, logger);
}
