import type { ClientInfo } from '../client.js';
import type { FailureLimiter } from '../failure-limiter.js';
import { type AuthSubject, authSubject } from '../subject.js';
import type { AuthGateParts } from './auth-gate-setup.js';
import type { BudgetCheck } from './browser-budget.js';

/** The budgets an auth attempt spends, by the kind of client that makes it. */
export interface AttemptBudgets {
  /** A browser's: its origin's; a loopback browser's site and all origins as well. */
  browser(client: ClientInfo): readonly BudgetCheck[];
  /** A non-browser client's: its own, and its IPv6 networks'. */
  client(client: ClientInfo, subject: AuthSubject): readonly BudgetCheck[];
  /** Those of `client`, whichever kind it is. */
  of(client: ClientInfo): readonly BudgetCheck[];
  /** What a non-browser `client` is counted as (exempt when loopback and the limiter exempts it). */
  subject(client: ClientInfo): AuthSubject;
}

/** The budgets of an auth gate's attempts, over its parts. */
export function attemptBudgets(p: AuthGateParts): AttemptBudgets {
  const { limiter } = p;
  const budgets: AttemptBudgets = {
    browser(client) {
      if (p.browserFollows) followMain(limiter, p.browserLimiter);
      const checks = p.browser.checks(client);
      if (p.networks === undefined || checks.length > 1) return checks;
      return p.networks.checks(checks[0] as BudgetCheck, client.ip);
    },
    client(client, subject) {
      const own = { limiter, subject };
      return p.networks === undefined ? [own] : p.networks.checks(own, client.ip);
    },
    of(client) {
      if (client.origin !== undefined) return budgets.browser(client);
      return budgets.client(client, budgets.subject(client));
    },
    subject: (client) => authSubject(client, { exemptLoopback: limiter.config.exemptLoopback }),
  };
  return budgets;
}

/**
 * The browser limiter the gate built has the main limiter's numbers: when the main one was
 * reconfigured (through this gate or directly), it follows before its next decision.
 */
function followMain(limiter: FailureLimiter, browserLimiter: FailureLimiter): void {
  const m = limiter.config;
  const b = browserLimiter.config;
  if (
    b.maxAttempts !== m.maxAttempts ||
    b.windowMs !== m.windowMs ||
    b.lockoutMs !== m.lockoutMs ||
    b.dryRun !== m.dryRun
  )
    browserLimiter.reconfigure({
      maxAttempts: m.maxAttempts,
      windowMs: m.windowMs,
      lockoutMs: m.lockoutMs,
      dryRun: m.dryRun,
    });
}
