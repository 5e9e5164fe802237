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
import { LeaseQueue } from './lease-queue.js';
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
  /** Count, but never refuse (nor queue). @default false */
  dryRun?: boolean;
  /**
   * Most requests of one key that wait for a slot instead of being refused at once; they are let
   * in in order of arrival. `0`: none wait. @default 0
   */
  queue?: number;
  /** How long a queued request waits for a slot before it is refused. @default 10_000 */
  queueTimeoutMs?: number;
  /**
   * How often the first request of a line asks the store again (a slot given back in this process
   * wakes it at once; one given back by another process sharing the store, only this). @default 100
   */
  queuePollMs?: number;
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
  /** Whether a refused request may wait for a slot (`queue` > 0, not a dry run). */
  readonly queues: boolean;
  /** How many requests wait for a slot now, over every key (a gauge of the queue's depth). */
  queued(): number;
  /**
   * Takes a slot of `key`; release the lease when the work ends, whatever the outcome. With a
   * queue, a request refused a slot waits for one (a promise) until `queueTimeoutMs`, or until
   * `signal` aborts (its client left): either way it is then refused.
   */
  acquire(key: string, signal?: AbortSignal): MaybePromise<Lease>;
  /** Closes the store the limiter built (a store you passed is yours to close). */
  close(): MaybePromise<void>;
}

/** The option checks of {@link createConcurrencyLimiter}, which the concurrency gate hands on. */
export const concurrencySpec = {
  ...limiterSpec,
  max: integer(1),
  leaseMs: duration(3),
  retryAfterMs: duration(0),
  store: withMethods<Store>('acquire', 'release'),
  maxEntries: integer(1),
  queue: integer(0, 1_000_000),
  queueTimeoutMs: duration(1),
  queuePollMs: duration(1),
};

/** Lease ids: this process's random prefix and a counter, so processes sharing a store never clash. */
const processId = randomBytes(8).toString('hex');
let leaseCount = 0;

/** What a newcomer behind a line is refused with when the line is full. */
const FULL: LeaseAnswer = Object.freeze({ acquired: false, held: 0 });

/** Swallows the failure of a release nobody waits for: the lease then ends after leaseMs. */
function settled(given: MaybePromise<void>): void {
  if (isPromise(given)) given.catch(() => {});
}

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
  // A dry run refuses nobody, so nobody waits.
  const queue =
    (o.queue ?? 0) > 0 && !dryRun
      ? new LeaseQueue(
          {
            size: o.queue as number,
            timeoutMs: o.queueTimeoutMs ?? 10_000,
            pollMs: o.queuePollMs ?? 100,
          },
          timers,
          {
            take: (k, id) => leases.acquire(k, rule, id),
            give: (k, id) => settled(leases.release(k, id)),
          },
        )
      : undefined;

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
      if (queue === undefined) settled(given);
      else if (isPromise(given))
        given.then(
          () => queue.wake(k),
          () => queue.wake(k),
        );
      else queue.wake(k);
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

  function answered(
    key: string,
    k: string,
    id: string,
    a: LeaseAnswer,
    signal: AbortSignal | undefined,
  ): MaybePromise<Lease> {
    // A store that failed closed is refused at once: waiting would not bring it back.
    if (a.acquired || queue === undefined || a.reason === 'store-error')
      return leaseOf(key, k, id, a);
    return queued(key, k, id, a, signal);
  }

  async function queued(
    key: string,
    k: string,
    id: string,
    refusal: LeaseAnswer,
    signal: AbortSignal | undefined,
  ): Promise<Lease> {
    const got = await (queue as LeaseQueue).wait(k, id, signal);
    return leaseOf(key, k, id, got ?? refusal);
  }

  return {
    name,
    rule,
    store,
    queues: queue !== undefined,
    queued: () => queue?.size ?? 0,
    acquire(key: string, signal?: AbortSignal): MaybePromise<Lease> {
      const bounded =
        typeof key === 'string' && key.length <= MAX_KEY_LENGTH ? key : boundedKey(key);
      const k = namespace + bounded;
      const id = `${processId}:${(++leaseCount).toString(36)}`;
      // Requests already waiting for this key go first: a newcomer joins the line behind them.
      if (queue?.waiting(k) === true) return queued(bounded, k, id, FULL, signal);
      const a = leases.acquire(k, rule, id);
      if (isPromise(a)) return a.then((x) => answered(bounded, k, id, x, signal));
      return answered(bounded, k, id, a, signal);
    },
    close: () => (own ? store.close() : undefined),
  };
}
