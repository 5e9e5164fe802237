import type { ClientInfo } from '../client.js';
import { isPromise, type MaybePromise } from '../promise.js';
import type { Decision } from '../decision.js';
import type { Logger } from '../events.js';
import { createFailureLimiter, type FailureLimiter } from '../failure-limiter.js';
import { isLoopback } from '../ip.js';
import { MemoryStore } from '../memory-store.js';
import { originSite } from '../origin.js';
import type { Store } from '../store.js';
import { authSubject } from '../subject.js';
import { PerOwner } from '../per-owner.js';

/**
 * The aggregate budgets a loopback browser attempt must also fit in. Every origin has its own
 * bucket, but a page that can mint subdomains (wildcard DNS) could otherwise get a fresh bucket per
 * subdomain; one site is one attacker, and all local browser origins together are bounded too.
 */
export interface BrowserBudgetOptions {
  /** Failures per site (registrable domain) within the window. @default the limiter's `maxAttempts` */
  perSite?: number;
  /** Failures across all loopback browser origins within the window. @default 3 × `maxAttempts` */
  allOrigins?: number;
}

/** The multiple of `maxAttempts` that all loopback browser origins share by default. */
export const ALL_ORIGINS_MULTIPLE = 3;

/** The key of the all-origins budget. */
const ALL_ORIGINS_KEY = 'browser-origins:all';

/** One limiter and the subject it is asked about. */
export interface BudgetCheck {
  readonly limiter: FailureLimiter;
  readonly subject: { readonly key: string; readonly exempt: boolean };
}

/** The aggregate limiters of one browser limiter. */
interface Aggregates {
  readonly site: FailureLimiter;
  readonly all: FailureLimiter;
}

const aggregateCache = new WeakMap<FailureLimiter, Map<string, Aggregates>>();

/** The sibling stores made for each store, by what they hold (`browser`, `site`, `all-origins`). */
const siblings = new PerOwner<Store, string, MemoryStore>();

/**
 * The store that holds `role` keys beside `store`: for a `MemoryStore` (bounded), a sibling of the
 * same bound made once per store and role, so that every gate and limiter built over `store` finds
 * the same state in it (browser lockouts belong to the main limiter's store, not to a gate); for any
 * other store (Redis, unbounded), `store` itself, where names keep the keys apart.
 */
export function siblingOf(store: Store, role: string): Store {
  if (!(store instanceof MemoryStore)) return store;
  const byRole = siblings.of(store);
  let sibling = byRole.get(role);
  if (sibling === undefined) {
    sibling = store.sibling();
    byRole.set(role, sibling);
  }
  return sibling;
}

/** Closes and forgets the siblings of `store`, and theirs (a browser store's aggregate stores). */
export function releaseSiblings(store: Store): void {
  const byRole = siblings.take(store);
  if (byRole === undefined) return;
  for (const sibling of byRole.values()) {
    releaseSiblings(sibling);
    sibling.close();
  }
}

/**
 * The per-site and all-origins limiters of `browser`: same window and lockout, their own maximum,
 * never loopback-exempt, under their own names. Cached per browser limiter and
 * numbers, so gates that share a browser limiter (HTTP and WS of one gateway) share the budgets.
 */
function aggregatesOf(browser: FailureLimiter, options: BrowserBudgetOptions): Aggregates {
  const id = `${options.perSite ?? 'max'}/${options.allOrigins ?? 'x3'}`;
  let byNumbers = aggregateCache.get(browser);
  if (byNumbers === undefined) {
    byNumbers = new Map();
    aggregateCache.set(browser, byNumbers);
  }
  let found = byNumbers.get(id);
  const c = browser.config;
  const perSite = options.perSite ?? c.maxAttempts;
  const allOrigins = options.allOrigins ?? ALL_ORIGINS_MULTIPLE * c.maxAttempts;
  if (found === undefined) {
    // In stores of their own where stores are bounded: other browser keys (remote clients with an
    // Origin) must not be able to evict an aggregate and so refund what it counted. The all-origins
    // budget has a store to itself: beside the site budgets, a page minting sites (one key each)
    // would evict it, the oldest key, and so flush the one budget that bounds them all.
    const own = (role: string) => siblingOf(browser.store, role);
    const make = (suffix: string, maxAttempts: number, store: Store) =>
      createFailureLimiter({
        maxAttempts,
        windowMs: c.windowMs,
        lockoutMs: c.lockoutMs,
        exemptLoopback: false,
        dryRun: c.dryRun,
        name: `${c.name}-${suffix}`,
        store,
        ...(browser.logger !== undefined && { logger: browser.logger }),
      });
    found = {
      site: make('site', perSite, own('site')),
      all: make('all-origins', allOrigins, own('all-origins')),
    };
    byNumbers.set(id, found);
  } else {
    // The browser limiter was reconfigured: the budgets follow, keeping what they counted.
    follow(found.site, perSite, c);
    follow(found.all, allOrigins, c);
  }
  return found;
}

/**
 * Reconfigures a limiter built beside another (an aggregate budget, a network's) to `maxAttempts`
 * and the other's window, lockout and dry run, when they differ: what it counted is kept.
 */
export function follow(
  aggregate: FailureLimiter,
  maxAttempts: number,
  c: FailureLimiter['config'],
): void {
  const a = aggregate.config;
  if (
    a.maxAttempts !== maxAttempts ||
    a.windowMs !== c.windowMs ||
    a.lockoutMs !== c.lockoutMs ||
    a.dryRun !== c.dryRun
  )
    aggregate.reconfigure({
      maxAttempts,
      windowMs: c.windowMs,
      lockoutMs: c.lockoutMs,
      dryRun: c.dryRun,
    });
}

/** What a gate needs for browser requests: the limiter and the checks of one client. */
export interface BrowserBudgets {
  /** The per-origin (or, from a remote client, per-IP) browser limiter. */
  readonly limiter: FailureLimiter;
  /**
   * The limiters and subjects a browser attempt by `client` must pass: the origin's own bucket,
   * then (from loopback only) its site's and the all-origins budget. The first is the one whose
   * success resets the client; the others only ever count failures.
   */
  checks(client: ClientInfo): readonly BudgetCheck[];
}

/**
 * Builds the browser side of an auth gate around `browser`, the per-origin limiter. Browser keys
 * live in a store of their own when the main limiter keeps a `MemoryStore` (see
 * {@link browserLimiterFor}), so a local page minting origins can fill only its own budget.
 */
export function browserBudgets(
  browser: FailureLimiter,
  options: BrowserBudgetOptions = {},
): BrowserBudgets {
  const allSubject = { key: ALL_ORIGINS_KEY, exempt: false };
  aggregatesOf(browser, options);
  return {
    limiter: browser,
    checks(client: ClientInfo): readonly BudgetCheck[] {
      const subject = authSubject(client, { exemptLoopback: false });
      const own: BudgetCheck = { limiter: browser, subject };
      if (client.ip === undefined || !isLoopback(client.ip)) return [own];
      const { site, all } = aggregatesOf(browser, options);
      return [
        own,
        {
          limiter: site,
          subject: { key: `browser-site:${originSite(subject.key)}`, exempt: false },
        },
        { limiter: all, subject: allSubject },
      ];
    },
  };
}

interface SharedBrowser {
  readonly limiter: FailureLimiter;
  refs: number;
}

const builtBrowser = new WeakMap<FailureLimiter, SharedBrowser>();

/**
 * The browser limiter a gate builds for `main` (same numbers, never loopback-exempt), one per main
 * limiter so that gates sharing `main` share browser state too. When `main` keeps its state in a
 * `MemoryStore`, browser keys live in a sibling store of their own: a browser flood then evicts or
 * overflows only browser keys and never refuses a non-browser client. A shared store (Redis) has no
 * entry bound, so browser keys live there under their own name. Either way the browser state
 * belongs to `main`'s store, not to the gate: a gate closed and built again around the same
 * `limiter` (or `store`) finds every browser lockout it left. `ownsStore` says whether the gate
 * built that store itself (no `limiter`, no `store` given): only then does the `close()` of the
 * last gate that asked for this limiter release the browser stores, since nothing else can reach
 * them.
 */
export function browserLimiterFor(
  main: FailureLimiter,
  logger: Logger | undefined,
  ownsStore: boolean,
): FailureLimiter {
  const shared = builtBrowser.get(main);
  if (shared !== undefined) {
    shared.refs++;
    return shared.limiter;
  }
  const c = main.config;
  const limiter = createFailureLimiter({
    maxAttempts: c.maxAttempts,
    windowMs: c.windowMs,
    lockoutMs: c.lockoutMs,
    ipv6Subnet: c.ipv6Subnet,
    dryRun: c.dryRun,
    exemptLoopback: false,
    name: `${c.name}-browser`,
    store: siblingOf(main.store, 'browser'),
    ...(logger !== undefined && { logger }),
  });
  const entry: SharedBrowser = {
    limiter: {
      ...limiter,
      close(): MaybePromise<void> {
        if (entry.refs > 0) entry.refs--;
        if (entry.refs > 0 || !ownsStore) return undefined;
        builtBrowser.delete(main);
        releaseSiblings(main.store);
        return undefined;
      },
    },
    refs: 1,
  };
  builtBrowser.set(main, entry);
  return entry.limiter;
}

/** Runs `fn` over every item, in parallel when any answer is a promise. */
export function eachMaybe<T, R>(
  items: readonly T[],
  fn: (item: T) => MaybePromise<R>,
): MaybePromise<R[]> {
  const out = items.map(fn);
  return out.some(isPromise) ? Promise.all(out) : (out as R[]);
}

/** The refusal to report among several decisions: the one that waits longest. */
export function firstRefusal(decisions: readonly Decision[]): Decision | undefined {
  let worst: Decision | undefined;
  for (const d of decisions) {
    if (d.allowed) continue;
    if (worst === undefined || d.retryAfterMs > worst.retryAfterMs) worst = d;
  }
  return worst;
}
