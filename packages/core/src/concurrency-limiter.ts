import { randomBytes } from 'node:crypto';
import type { Clock, TimerHandle, Timers } from './clock.js';
import { systemTimers } from './clock.js';
import { decision, type Decision } from './decision.js';
import { channels, type Logger, publishDecided, publishDecision } from './events.js';
import { boundedKey, MAX_KEY_LENGTH } from './keys.js';
import { limiterSpec, limiterStore } from './limiter-store.js';
import { duration, integer, parseOptions, required, withMethods } from './options.js';
import { checkPolicyName } from './policy-name.js';
import { isPromise, type MaybePromise } from './promise.js';
import type { LeaseAnswer, LeaseRule, Store } from './store.js';
import type { Warnings } from './warnings.js';

/** Options of {@link createConcurrencyLimiter}. */
export interface ConcurrencyLimiterOptions {
  /** Most requests of one key in flight at once. Required. */
  max: number;
  /**
   * How long a lease lasts unless renewed. The holder renews it every third of this while its
   * request runs, so on a shared store a crashed process's slots come back after at most this.
   * @default 60_000
   */
  leaseMs?: number;
  /** The `Retry-After` of a refusal: nobody knows when a slot frees, so this is a hint. @default 1000 */
  retryAfterMs?: number;
  /** Namespaces keys in a shared store and names the limiter in events. @default 'default' */
  name?: string;
  /** Where leases live (a `Store` with `acquire` and `release`). @default a new MemoryStore */
  store?: Store;
  /** Most keys in the built-in memory store's windows (leases are bounded by requests). */
  maxEntries?: number;
  /** Time source for the built-in store. @default systemClock */
  clock?: Clock;
  /** Timers for the heartbeat (and the built-in store's sweep). @default systemTimers */
  timers?: Timers;
  /** Count, but never refuse. @default false */
  dryRun?: boolean;
  /** Accepted as every limiter accepts it; a concurrency limiter has nothing to warn about yet. */
  logger?: Logger;
  /** Warnings switched off by code. */
  warnings?: Warnings;
}

/** A slot taken (or refused): its decision, and how to give it back. */
export interface Lease {
  /**
   * `allowed` when the slot is held (or in a dry run); `limit` is `max`, `remaining` the slots
   * left, and a refusal's `retryAfterMs` the `retryAfterMs` option.
   */
  readonly decision: Decision;
  /** Gives the slot back and stops its heartbeat; calling it again does nothing. */
  release(): void;
}

/** At most `max` requests of one key in flight (docs/design.md#concurrency). */
export interface ConcurrencyLimiter {
  /** The limiter's name. */
  readonly name: string;
  /** The rule in force: `max` and `leaseMs`. */
  readonly rule: LeaseRule;
  /** The store the leases live in. */
  readonly store: Store;
  /** Takes a slot of `key`; release the lease when the work ends, whatever the outcome. */
  acquire(key: string): MaybePromise<Lease>;
  /** Closes the store the limiter built (a store you passed is yours to close). */
  close(): MaybePromise<void>;
}

const concurrencySpec = {
  ...limiterSpec,
  max: integer(1),
  leaseMs: duration(3),
  retryAfterMs: duration(0),
  store: withMethods<Store>('acquire', 'release'),
  maxEntries: integer(1),
};

/** Lease ids: this process's random prefix and a counter, so processes sharing a store never clash. */
const processId = randomBytes(8).toString('hex');
let leaseCount = 0;

/** A lease refused, or one that is not held: its release does nothing. */
const nothingHeld = (): void => {};

/**
 * A concurrency limiter: at most `max` leases of one key held at once, each renewed while its
 * work runs and released when it ends (docs/design.md#concurrency).
 * @throws {PortcullisConfigError} for a wrong or unknown option, or a store without leases
 */
export function createConcurrencyLimiter(options: ConcurrencyLimiterOptions): ConcurrencyLimiter {
  const where = 'createConcurrencyLimiter';
  const o = parseOptions(options, concurrencySpec, where);
  const rule: LeaseRule = Object.freeze({
    max: required(o.max, 'max', 'an integer ≥ 1', where),
    leaseMs: o.leaseMs ?? 60_000,
  });
  const name = checkPolicyName(o.name ?? 'default');
  const { store, own, namespace } = limiterStore(o, name, where);
  // The option check made sure of both methods (a MemoryStore and a RedisStore have them).
  const leases = store as Store & Required<Pick<Store, 'acquire' | 'release'>>;
  const timers = o.timers ?? systemTimers;
  const retryAfterMs = o.retryAfterMs ?? 1000;
  const dryRun = o.dryRun ?? false;
  const beatMs = Math.max(1, Math.floor(rule.leaseMs / 3));

  function held(k: string, id: string): () => void {
    let timer: TimerHandle | undefined;
    let done = false;
    const beat = () => {
      timer = undefined;
      if (done) return;
      const renewed = leases.acquire(k, rule, id);
      // A failed renewal is no failure of the request: the lease then ends after leaseMs.
      if (isPromise(renewed)) renewed.then(next, next);
      else next();
    };
    const next = () => {
      if (!done) timer = timers.setTimeout(beat, beatMs);
    };
    next();
    return () => {
      if (done) return;
      done = true;
      if (timer !== undefined) timers.clearTimeout(timer);
      const given = leases.release(k, id);
      if (isPromise(given)) given.catch(() => {});
    };
  }

  function leaseOf(key: string, k: string, id: string, a: LeaseAnswer): Lease {
    const d = decisionOf(key, a);
    const out = dryRun && !d.allowed ? { ...d, allowed: true, dryRun: true as const } : d;
    if (out.reason !== 'allowed') publishDecision(name, undefined, out);
    if (channels.decision.hasSubscribers) publishDecided(name, undefined, out);
    return { decision: out, release: a.acquired ? held(k, id) : nothingHeld };
  }

  function decisionOf(key: string, a: LeaseAnswer): Decision {
    const left = Math.max(0, rule.max - a.held);
    if (a.acquired) return decision(true, a.reason ?? 'allowed', rule.max, left, 0, 0, key);
    const reason = a.reason ?? 'limited';
    return decision(false, reason, rule.max, 0, retryAfterMs, retryAfterMs, key);
  }

  return {
    name,
    rule,
    store,
    acquire(key: string): MaybePromise<Lease> {
      const bounded =
        typeof key === 'string' && key.length <= MAX_KEY_LENGTH ? key : boundedKey(key);
      const k = namespace + bounded;
      const id = `${processId}:${(++leaseCount).toString(36)}`;
      const a = leases.acquire(k, rule, id);
      return isPromise(a) ? a.then((x) => leaseOf(bounded, k, id, x)) : leaseOf(bounded, k, id, a);
    },
    close: () => (own ? store.close() : undefined),
  };
}
