import { createFailureLimiter, type FailureLimiter } from '../failure-limiter.js';
import { parseIp } from '../ip.js';
import { type Ipv6Network, networkKeysOf } from '../ipv6-networks.js';
import { type BudgetCheck, follow, siblingOf } from './browser-budget.js';

/** The network failure limiters built for one client limiter, by the networks' numbers. */
const built = new WeakMap<FailureLimiter, Map<string, readonly FailureLimiter[]>>();

/**
 * The failure limiters of `networks` beside `client` (docs/design.md#ipv6-networks): each counts
 * the failures of every client in one network, up to `factor` times the client's `maxAttempts`,
 * with its window and lockout, never loopback-exempt and never escalating. One set per client
 * limiter and numbers, so gates that share a limiter (HTTP and WS of one gateway) share them. In a
 * bounded store each prefix has a sibling store of its own: a flood of fresh client keys cannot
 * evict a network's count.
 */
export function networkLimiters(
  client: FailureLimiter,
  networks: readonly Ipv6Network[],
): readonly FailureLimiter[] {
  const id = networks.map((n) => `${n.prefix}x${n.factor}`).join(',');
  let byNumbers = built.get(client);
  if (byNumbers === undefined) {
    byNumbers = new Map();
    built.set(client, byNumbers);
  }
  const found = byNumbers.get(id);
  if (found !== undefined) return found;
  const c = client.config;
  const limiters = networks.map((n) =>
    createFailureLimiter({
      maxAttempts: n.factor * c.maxAttempts,
      windowMs: c.windowMs,
      lockoutMs: c.lockoutMs,
      exemptLoopback: false,
      dryRun: c.dryRun,
      name: `${c.name}-ipv6-${n.prefix}`,
      store: siblingOf(client.store, `ipv6-${n.prefix}`),
      ...(client.logger !== undefined && { logger: client.logger }),
    }),
  );
  byNumbers.set(id, limiters);
  return limiters;
}

/** The network budgets of an auth gate: what an attempt from one client IP must also pass. */
export class NetworkBudgets {
  readonly #client: FailureLimiter;
  readonly #networks: readonly Ipv6Network[];
  /** One limiter per network, narrowest first. */
  readonly limiters: readonly FailureLimiter[];

  constructor(client: FailureLimiter, networks: readonly Ipv6Network[]) {
    this.#client = client;
    this.#networks = networks;
    this.limiters = networkLimiters(client, networks);
  }

  /**
   * `own` followed by the budgets of the networks around `ip`; `own` alone for a client that has
   * none (IPv4, IPv6 carrying IPv4, loopback, unresolved) or is exempt. The client limiter's
   * numbers, reconfigured since, are followed first.
   */
  checks(own: BudgetCheck, ip: string | undefined): readonly BudgetCheck[] {
    if (own.subject.exempt || ip === undefined) return [own];
    const keys = networkKeysOf(parseIp(ip), this.#networks);
    if (keys === undefined) return [own];
    const c = this.#client.config;
    const out: BudgetCheck[] = [own];
    for (let i = 0; i < keys.length; i++) {
      const limiter = this.limiters[i] as FailureLimiter;
      follow(limiter, (this.#networks[i] as Ipv6Network).factor * c.maxAttempts, c);
      out.push({ limiter, subject: { key: keys[i] as string, exempt: false } });
    }
    return out;
  }
}
