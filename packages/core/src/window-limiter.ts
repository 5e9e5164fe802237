import { safeLogger } from './safe-call.js';
import type { Clock, Timers } from './clock.js';
import { isPromise, type MaybePromise } from './promise.js';
import { asDryRun, type Decision, LinkedDecision, withKey } from './decision.js';
import { channels, type Logger, publishDecided, publishDecision } from './events.js';
import { boundedKey, MAX_KEY_LENGTH } from './keys.js';
import {
  claimName,
  type LimiterStore,
  limiterSpec,
  limiterStore,
  POLICY_MEMBER,
  restampStore,
} from './limiter-store.js';
import { MemoryStore } from './memory-store.js';
import { checkPolicyName } from './policy-name.js';
import { checkLimitSpan, duration, integer, oneOf, parseOptions, withMethods } from './options.js';
import type { Algorithm, Store, WindowRule } from './store.js';
import type { Warnings } from './warnings.js';
import { chargeTo } from './window-charge.js';

/** Options of {@link createWindowLimiter}. */
export interface WindowLimiterOptions {
  /** Units per window (bucket capacity for `token-bucket`). @default 60 */
  limit?: number;
  /** Window length (time to refill a whole bucket for `token-bucket`). @default 60_000 */
  windowMs?: number;
  /** @default 'fixed-window' */
  algorithm?: Algorithm;
  /** Where state lives. @default a new MemoryStore */
  store?: Store;
  /** Most keys in the built-in memory store (not allowed together with `store`). @default 10_000 */
  maxEntries?: number;
  /** Time source for the built-in store. @default systemClock */
  clock?: Clock;
  /** Timers for the built-in store's sweep. @default systemTimers */
  timers?: Timers;
  /** Warned once when the store, full of blocked windows, first refuses a new key ('overflow'). */
  logger?: Logger;
  /** Count and publish as usual, but never refuse. @default false */
  dryRun?: boolean;
  /** Names the limiter in events and headers; namespaces its keys in a shared store. @default 'default' */
  name?: string;
  /**
   * Misconfiguration warnings switched off, by code (`{ PORTCULLIS_NAME_CLASH: false }`).
   * @default every warning on
   */
  warnings?: Warnings;
}

/**
 * A window limiter: fixed window, sliding window or token bucket over opaque keys. `D` is
 * `Decision` for the in-memory store (synchronous answers), `MaybePromise<Decision>` otherwise.
 */
export interface WindowLimiter<D extends MaybePromise<Decision> = MaybePromise<Decision>> {
  /** Spends `cost` units of `key`; a refused call spends nothing. */
  consume(key: string, cost?: number): D;
  /** What `consume(key)` would answer, without side effects. */
  peek(key: string): D;
  /** Forgets `key`. */
  reset(key: string): MaybePromise<void>;
  /**
   * Gives back `cost` units of `key` spent `agoMs` ago, to the window they were spent in (never
   * below zero). Backs `skipSuccessfulRequests` / `skipFailedRequests`. An `agoMs` that is not a
   * positive number counts as 0 (just spent). `spent`: the decision `consume` returned for those
   * units, when you have it; a shared store then knows exactly when they were spent.
   * @throws {RangeError} `ERR_PORTCULLIS_COST` for a cost that is not a positive integer, as `consume`
   */
  refund(key: string, cost: number, agoMs: number, spent?: Decision): MaybePromise<void>;
  /**
   * Spends `cost` more units of `key` after the fact, when they are known only once the work is
   * done (docs/design.md#charge-after): all of them when they fit, else what is left, so the next
   * `consume` is refused until the window has room again. Publishes no decision (the request was
   * decided already). Answers the units spent. Backs `rateLimit`'s `chargeAfter`.
   * @throws {RangeError} `ERR_PORTCULLIS_COST` for a cost that is not a non-negative integer
   */
  charge(key: string, cost: number): MaybePromise<number>;
  /** Keys held by the store. */
  size(): MaybePromise<number>;
  /** Stops the store's timer (and closes a store the limiter created). */
  close(): MaybePromise<void>;
  /** The rule in force. */
  readonly rule: WindowRule;
  /**
   * Changes the numbers in force without a restart: counts are kept and read under the new rule
   * from the next call on (a key already over a lowered limit is refused at once; raising the
   * limit frees room at once). `rule` shows the new values.
   * @throws {PortcullisConfigError} for a wrong or unknown option
   */
  reconfigure(partial: WindowLimiterReconfig): void;
  /** The limiter's name. */
  readonly name: string;
  /** Whether the limiter is in dry-run mode. */
  readonly dryRun: boolean;
  /** The store in use. */
  readonly store: Store;
}

/**
 * The option checks of {@link createWindowLimiter}: for a wrapper that hands its options on to one
 * (the request gate, rpc's method quotas) and so must check them alike.
 */
export const windowLimiterSpec = {
  limit: integer(1),
  windowMs: duration(1),
  algorithm: oneOf<Algorithm>(['fixed-window', 'sliding-window', 'token-bucket']),
  store: withMethods<Store>('consume', 'peek', 'refund', 'delete'),
  maxEntries: integer(1),
  ...limiterSpec,
};

/** What {@link WindowLimiter.reconfigure} may change. */
export type WindowLimiterReconfig = Partial<
  Pick<WindowLimiterOptions, 'limit' | 'windowMs' | 'algorithm' | 'dryRun'>
>;

const reconfigureSpec = {
  limit: windowLimiterSpec.limit,
  windowMs: windowLimiterSpec.windowMs,
  algorithm: windowLimiterSpec.algorithm,
  dryRun: windowLimiterSpec.dryRun,
};

/** Validates a per-call cost: a positive safe integer. */
export function checkCost(cost: unknown): number {
  if (typeof cost === 'number' && Number.isSafeInteger(cost) && cost >= 1) return cost;
  const error = new RangeError(`Portcullis: cost must be a positive integer, got ${String(cost)}`);
  (error as RangeError & { code: string }).code = 'ERR_PORTCULLIS_COST';
  throw error;
}

/**
 * Creates a window limiter. `fixed-window` is anchored at a key's first call and refused calls are
 * free; `sliding-window` is the weighted two-window counter; `token-bucket` refills continuously.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function createWindowLimiter(
  options?: WindowLimiterOptions & { store?: MemoryStore },
): WindowLimiter<Decision>;
/** With a store that may answer asynchronously (e.g. Redis), decisions may be promises. */
export function createWindowLimiter(options?: WindowLimiterOptions): WindowLimiter;
export function createWindowLimiter(options?: WindowLimiterOptions): WindowLimiter {
  const setup = resolveWindowSetup(options);
  const { name, store, namespace, logger } = setup;
  let { rule, dryRun } = setup;
  let warnedOverflow = false;

  function finish(key: string, d: Decision): Decision {
    const out = namespace === '' ? d : withKey(d, key);
    if (out.reason !== 'allowed') publishDecision(name, undefined, out);
    if (out.reason === 'overflow' && !warnedOverflow && logger !== undefined) {
      // Once per limiter: the hot path cannot see when an episode ends, and the channel has them all.
      warnedOverflow = true;
      warnOverflow(logger, name, key);
    }
    const final = dryRun ? asDryRun(out) : out;
    // portcullis:decision (metrics): every outcome, only while someone listens.
    if (channels.decision.hasSubscribers) publishDecided(name, undefined, final);
    return final;
  }

  /** A memory store's decision that is not plainly allowed: a refusal, or any in a dry run. */
  function settle(k: string, d: Decision): Decision {
    // A plain refusal nobody listens for is returned as is: going through finish() cost a refused
    // hot key 10–25 ns (measured), a quarter of its decision.
    if (!dryRun && d.reason === 'limited' && !channels.limited.hasSubscribers) {
      // portcullis:decision (metrics): counted only while someone listens.
      if (!channels.decision.hasSubscribers) return d;
    }
    return finish(k, d);
  }

  // A private memory store answers synchronously: its hot path needs no promise check at all.
  const memory = setup.own && store instanceof MemoryStore ? store : undefined;

  return {
    consume: memory
      ? function consume(key: string, cost = 1): Decision {
          if (cost !== 1) checkCost(cost);
          const k = typeof key === 'string' && key.length <= MAX_KEY_LENGTH ? key : boundedKey(key);
          const d = memory.consume(k, rule, cost);
          // Everything but a plain allowed decision goes out of line: a hot path small enough for
          // V8 to inline whole into its caller (measured: 110 machine instructions fewer a call).
          // portcullis:decision (metrics): one getter read while nobody listens.
          return d.allowed && !dryRun && !channels.decision.hasSubscribers ? d : settle(k, d);
        }
      : function consume(key: string, cost = 1): MaybePromise<Decision> {
          if (cost !== 1) checkCost(cost);
          const k = limiterKey(key);
          const d = store.consume(namespace + k, rule, cost);
          if (isPromise(d))
            return d.then(
              (r): Decision =>
                // The plain allowed answer, copied once under the limiter's key and linked to the
                // store's own (a refund hands it back); anything else goes through finish().
                r.allowed && !dryRun && !channels.decision.hasSubscribers
                  ? new LinkedDecision(r, k, r)
                  : traced(r, finish(k, r)),
            );
          // portcullis:decision (metrics): counted only while someone listens.
          return d.allowed && !dryRun && namespace === '' && !channels.decision.hasSubscribers
            ? d
            : finish(k, d);
        },
    peek(key: string): MaybePromise<Decision> {
      const k = limiterKey(key);
      const report = (d: Decision) => {
        const out = namespace === '' ? d : withKey(d, k);
        return dryRun ? asDryRun(out) : out;
      };
      const d = store.peek(namespace + k, rule);
      return isPromise(d) ? d.then(report) : report(d);
    },
    reset: (key: string) => store.delete(namespace + limiterKey(key)),
    refund: (key: string, cost: number, agoMs: number, spent?: Decision) =>
      refundTo(store, namespace, key, rule, cost, agoMs, spent),
    charge(key: string, cost: number): MaybePromise<number> {
      if (cost !== 0) checkCost(cost);
      return chargeTo(store, namespace + limiterKey(key), rule, cost);
    },
    size: () => store.size(),
    close: () => (setup.own ? store.close() : undefined),
    reconfigure(partial: WindowLimiterReconfig): void {
      const p = parseOptions(partial, reconfigureSpec, 'reconfigure');
      const before = rule;
      rule = nextRule(before, p);
      dryRun = p.dryRun ?? dryRun;
      // Counts are kept: the next call reads them under the new rule, and the store re-stamps
      // their expiry under it (a widened window keeps an untouched count past its old end).
      if (!sameRule(before, rule)) restampStore(store, namespace, before, rule, logger);
    },
    get rule() {
      return rule;
    },
    name,
    get dryRun() {
      return dryRun;
    },
    store,
  };
}

/** What a window limiter is built from, once its options are checked and its store chosen. */
interface WindowSetup extends LimiterStore {
  readonly rule: WindowRule;
  readonly name: string;
  readonly dryRun: boolean;
  readonly logger: Logger | undefined;
}

/** Checks `options`, applies the defaults, picks the store (see {@link limiterStore}). */
function resolveWindowSetup(options: WindowLimiterOptions | undefined): WindowSetup {
  const o = parseOptions(options, windowLimiterSpec, 'createWindowLimiter');
  const rule: WindowRule = Object.freeze({
    algorithm: o.algorithm ?? 'fixed-window',
    limit: o.limit ?? 60,
    windowMs: o.windowMs ?? 60_000,
  });
  checkLimitSpan(rule.limit, rule.windowMs, 'createWindowLimiter');
  // The name is advertised in RateLimit headers: refused here, not when a gate first writes one.
  const name = checkPolicyName(o.name ?? 'default');
  const dryRun = o.dryRun ?? false;
  const { store, own, namespace } = limiterStore(o, name, 'createWindowLimiter');
  const logger = safeLogger(o.logger);
  const policyMember = (options as Record<symbol, unknown> | undefined)?.[POLICY_MEMBER] === true;
  if (!own && !policyMember)
    claimName(
      store,
      name,
      `${rule.algorithm} ${rule.limit} per ${rule.windowMs} ms`,
      logger,
      o.warnings,
    );
  return { rule, name, dryRun, store, own, namespace, logger };
}

/** The rule `reconfigure` puts in force: `p`'s numbers, `before`'s where `p` names none. */
function nextRule(before: WindowRule, p: WindowLimiterReconfig): WindowRule {
  const next = Object.freeze({
    algorithm: p.algorithm ?? before.algorithm,
    limit: p.limit ?? before.limit,
    windowMs: p.windowMs ?? before.windowMs,
  });
  checkLimitSpan(next.limit, next.windowMs, 'reconfigure');
  return next;
}

/**
 * Whether two rules read a key's state alike. A changed algorithm starts each key afresh when
 * re-stamped, because one algorithm's state means nothing to another.
 */
function sameRule(a: WindowRule, b: WindowRule): boolean {
  return a.algorithm === b.algorithm && a.limit === b.limit && a.windowMs === b.windowMs;
}

/** A key as the store holds it: a long or non-string key is bounded (hashed), as in every limiter. */
function limiterKey(key: string): string {
  return typeof key === 'string' && key.length <= MAX_KEY_LENGTH ? key : boundedKey(key);
}

/**
 * The store's own decision behind each allowed one a limiter answered with a copy (its key
 * without the namespace, a dry run's flag): a refund hands the store what it made.
 */
function traced(made: Decision, out: Decision): Decision {
  return out !== made && made.allowed ? new LinkedDecision(out, out.key, made) : out;
}

/** Gives `cost` units spent `agoMs` ago back to `key` in `store` (see `WindowLimiter.refund`). */
function refundTo(
  store: Store,
  namespace: string,
  key: string,
  rule: WindowRule,
  cost: number,
  agoMs: number,
  spent: Decision | undefined,
): MaybePromise<void> {
  // A cost that is no count (undefined from plain JS) would make the count NaN: never sent.
  if (cost !== 1) checkCost(cost);
  const ago = Math.max(0, agoMs) || 0;
  const k = namespace + limiterKey(key);
  const made =
    spent === undefined ? undefined : ((LinkedDecision.linkOf(spent) as Decision) ?? spent);
  return made === undefined
    ? store.refund(k, rule, cost, ago)
    : store.refund(k, rule, cost, ago, made);
}

/** The one warning of a limiter whose store is full of blocked windows. */
function warnOverflow(logger: Logger, name: string, key: string): void {
  logger.warn(
    { code: 'PORTCULLIS_OVERFLOW', limiter: name, key },
    `Portcullis: limiter "${name}" is full of blocked windows and refuses new keys (reason 'overflow'); further overflows are published on portcullis:overflow`,
  );
}
