import type { MaybePromise } from './promise.js';
import type { Decision } from './decision.js';

/** The window algorithms. */
export type Algorithm = 'fixed-window' | 'sliding-window' | 'token-bucket';

/** What a window limiter asks of a store; every number a store needs travels with the call. */
export interface WindowRule {
  readonly algorithm: Algorithm;
  /** Units per window (or bucket capacity). */
  readonly limit: number;
  /** Window length (or time to refill a full bucket). */
  readonly windowMs: number;
}

/**
 * Escalation of repeated lockouts of one key (docs/design.md#defence-in-depth): a lockout that
 * starts within `maxLockoutMs` of the end of the same key's previous one lasts `factor` times as
 * long as that one did, at most `maxLockoutMs`.
 */
export interface EscalateRule {
  readonly factor: number;
  readonly maxLockoutMs: number;
}

/** What a failure limiter asks of a store. */
export interface FailureRule {
  readonly maxAttempts: number;
  readonly windowMs: number;
  readonly lockoutMs: number;
  /**
   * Lockouts of a key escalate (see {@link EscalateRule}): the store keeps the key's step and the
   * end of its last lockout for `maxLockoutMs` after that end; a success or a delete forgets them.
   * Absent: every lockout lasts `lockoutMs` and a key is forgotten when its lockout ends.
   */
  readonly escalate?: EscalateRule;
}

/** How a trust table is kept (see {@link Store.trust}). */
export interface TrustRule {
  /** How long a trust lasts after the success that earned it. */
  readonly trustMs: number;
  /** Most trusts the table holds. */
  readonly maxTrusted: number;
}

/**
 * One call of {@link Store.batch}: the store method it names and that method's arguments.
 * `recordFailure` and `recordDistinct` answer a {@link FailureDecision}, `checkFailures` and
 * `recordSuccess` a {@link Decision}, `trusted` a `boolean[]`, `trust` undefined.
 */
export type StoreCall =
  | {
      readonly op: 'checkFailures' | 'recordFailure' | 'recordSuccess';
      readonly key: string;
      readonly rule: FailureRule;
    }
  | {
      readonly op: 'recordDistinct';
      readonly key: string;
      readonly member: string;
      readonly rule: FailureRule;
    }
  | {
      readonly op: 'trust';
      readonly table: string;
      readonly group: string;
      readonly member: string;
      readonly rule: TrustRule;
    }
  | {
      readonly op: 'trusted';
      readonly table: string;
      readonly member: string;
      readonly groups: readonly string[];
      readonly rule: TrustRule;
    };

/** What one call of a {@link Store.batch} answers: what its method answers. */
export type StoreAnswer = Decision | FailureDecision | boolean[] | undefined;

/** A failure decision from a store, flagged when this very call started the lockout. */
export interface FailureDecision extends Decision {
  readonly lockoutStarted?: true;
}

/** A lockout in force, as a store lists it (see {@link Store.lockouts}). */
export interface StoreLockout {
  /** The key as the limiter wrote it (`<name>:<scope>:<subject>` in a shared store). */
  readonly key: string;
  /** When it ends, in the store's clock. */
  readonly until: number;
  /** `until` less the store's now. */
  readonly retryAfterMs: number;
  /** Set by hand (`ban`), not earned by failures. */
  readonly ban: boolean;
}

/** How the leases of one key are kept (see {@link Store.acquire}): a concurrency limit. */
export interface LeaseRule {
  /** Most leases of one key held at once (requests in flight). */
  readonly max: number;
  /**
   * How long a lease lasts from its last acquire: its holder renews it while it works, so a lease
   * whose holder died (a crashed process) goes after this long.
   */
  readonly leaseMs: number;
}

/** What {@link Store.acquire} answers. */
export interface LeaseAnswer {
  /** Whether the lease is held now. */
  readonly acquired: boolean;
  /** Live leases of the key after the call (the caller's included when acquired). */
  readonly held: number;
  /**
   * Set when a shared store could not be asked and its error policy answered instead:
   * `'fallback'` (a local store, or `open`, let it through), `'store-error'` (`closed` refused).
   */
  readonly reason?: 'fallback' | 'store-error';
}

/**
 * The order `Store.lockouts` lists in: soonest end first, then by key (so that every store lists
 * lockouts that end together in one order).
 */
export function byEnd(
  a: { key: string; until: number },
  b: { key: string; until: number },
): number {
  return a.until - b.until || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** An access rule as a store keeps it (docs/design.md#access-lists). */
export interface StoredAccessRule {
  /** The canonical subject (`ip:10.0.0.0/8`, `account:alice`, `origin:https://a.example`). */
  readonly subject: string;
  readonly action: 'allow' | 'deny';
  /** Why, as the operator wrote it; `''` for none. */
  readonly reason: string;
  /** When the rule ends, on the store's clock (ms); 0: until removed. */
  readonly until: number;
  /** When it was set, on the store's clock (ms). */
  readonly at: number;
}

/** The rules of an access list and the store's time they were read at. */
export interface AccessListing {
  readonly now: number;
  readonly rules: readonly StoredAccessRule[];
}

/** A rule to set: `ms` from the store's now, 0 for one that lasts until removed. */
export interface AccessRuleInput {
  readonly subject: string;
  readonly action: 'allow' | 'deny';
  readonly reason: string;
  readonly ms: number;
}

/**
 * Where limiter state lives. The transitions are defined once in `@portcullis/core`'s algorithms;
 * every store (memory, Redis) must produce identical decisions, which `describeStoreConformance`
 * proves. A store owns time: the memory store reads its clock, the Redis store the server's `TIME`.
 * Time may step back: state stamped in the future is clamped to now when read (and kept clamped),
 * so no wait exceeds `lockoutMs`, `windowMs` (two windows for the sliding window, the time its
 * state takes to drain) or a full bucket refill, and waiting the advertised `retryAfterMs` is enough.
 */
export interface Store {
  /** Spends `cost` units of `key` under `rule`; a refused call spends nothing. */
  consume(key: string, rule: WindowRule, cost: number): MaybePromise<Decision>;
  /** What `consume(key, rule, 1)` would answer, without changing anything. */
  peek(key: string, rule: WindowRule): MaybePromise<Decision>;
  /**
   * Gives back `cost` units of `key` that a `consume` under `rule` spent `agoMs` ago, atomically,
   * and only to the window they were spent in: a fixed window only when the window in force
   * started at or before then (`now - start >= agoMs`); a sliding window to its current window
   * when that started at or before then, else to its previous one when that did (`now - start +
   * windowMs >= agoMs`), else nothing (the units weigh nothing any more); a token bucket gets
   * `cost` tokens back, never above a full bucket. A count never goes below zero. An absent or
   * expired key, a key of another algorithm and failure state (a lockout) are left alone. Backs
   * `skipSuccessfulRequests` / `skipFailedRequests`. A shared store reports its own failure to
   * refund (its error policy, its logger) and resolves: a refund never fails a request.
   * `spent`, when given, is the decision of the `consume` whose units come back: a store that
   * answers later than it counts (a shared one) may know from it exactly when, by its own clock,
   * they were spent, where `agoMs` (measured by the caller from when the answer arrived) would let
   * a late answer refund into a window that began after the spend.
   */
  refund(
    key: string,
    rule: WindowRule,
    cost: number,
    agoMs: number,
    spent?: Decision,
  ): MaybePromise<void>;
  /** The failure state of `key` (locked or not); counts nothing. */
  checkFailures(key: string, rule: FailureRule): MaybePromise<Decision>;
  /** Counts one failure for `key`; starts the lockout when it reaches `maxAttempts`. */
  recordFailure(key: string, rule: FailureRule): MaybePromise<FailureDecision>;
  /**
   * A correct credential for `key`, atomically: when a lockout is in force it is kept and the
   * locked decision is returned (reason `'locked'`, `retryAfterMs = lockedUntil - now`), exactly as
   * `checkFailures` would answer; otherwise the failure history is forgotten and the answer is
   * allowed with `remaining = maxAttempts` (and `resetMs` 0). A success never lifts a lockout, even
   * one that a concurrent failure started a moment before.
   */
  recordSuccess(key: string, rule: FailureRule): MaybePromise<Decision>;
  /**
   * Optional: a limiter whose keys all start with `prefix` (`''`: every key of the store) was
   * reconfigured from rule `before` to `after`. The store re-stamps, under `after`, every live
   * state of those keys that `after` governs (its window algorithm, or failure state): what had
   * ended under `before` goes, failures that had expired under it are forgotten, and the rest
   * expires when `after` says, so a count is kept and read under the new rule however long the
   * key goes untouched. Counts, starts and lockouts are kept. A store without it keeps each key's
   * old expiry until the key is next touched (a widened window may then lose an untouched count).
   */
  restamp?(
    prefix: string,
    before: WindowRule | FailureRule,
    after: WindowRule | FailureRule,
  ): MaybePromise<void>;
  /**
   * Locks `key` out for `ms` from now, by hand (an operator's ban): refused, listed and lifted
   * (`delete`) like a lockout earned under `rule`, except that it lasts its own `ms` (a clock
   * stepping back bounds it by `ms`, not by `rule.lockoutMs`). A lockout in force that ends later
   * stays as it is. Answers the locked decision. Optional for custom stores (then a limiter's
   * `ban` throws); both stores here implement it.
   */
  ban?(key: string, rule: FailureRule, ms: number): MaybePromise<FailureDecision>;
  /**
   * The lockouts in force (earned or banned) whose key starts with `prefix`, soonest end first, at
   * most `limit`, each read under `rule` as `checkFailures` would read it (a lockout over is not
   * listed, one stamped in the future is clamped). A shared store reads an index it keeps, never
   * a scan of its keys. Optional for custom stores (then a limiter's `lockouts` throws); both
   * stores here implement it.
   */
  lockouts?(prefix: string, limit: number, rule: FailureRule): MaybePromise<StoreLockout[]>;
  /**
   * Optional (the auth layers' spray limit needs it): counts a failure of `key` against `member`,
   * where only distinct members count. The failure log holds each member's latest failure within
   * `windowMs` (a member failing again refreshes its time, it does not count twice); when that
   * brings the number of members to `maxAttempts` the lockout starts, exactly as
   * {@link Store.recordFailure} (escalation, clamping, listing, `checkFailures`, `delete` and `ban`
   * treat the key as any failure key). `member` is at most 256 characters (the caller bounds it).
   */
  recordDistinct?(key: string, member: string, rule: FailureRule): MaybePromise<FailureDecision>;
  /**
   * Optional (the auth layers' trust needs it): `member` authenticated for `group` of trust table
   * `table` now; an earlier trust of the same pair is refreshed. The table holds at most
   * `maxTrusted` pairs. Every change of a table (a trust earned, refreshed or forgotten) is one step
   * of its order. A new pair that finds the table full first forgets expired trusts, least
   * recently earned first, up to the first live one; then, while still full: when the new pair's
   * group holds at least as many trusts as the largest, that group's least recently earned trust;
   * else the least recently earned trust of the largest group, of those the group changed longest
   * ago. So a flood of successes for one group replaces that group's own trusts, never others'
   * once it is as large as any. Reference: core's `trust-table.ts`.
   */
  trust?(table: string, group: string, member: string, rule: TrustRule): MaybePromise<void>;
  /**
   * Optional, with {@link Store.trust}: for each of `groups`, whether `member` holds a trust of it
   * in `table` earned less than `trustMs` ago (a trust stamped in the future counts as earned now).
   */
  trusted?(
    table: string,
    member: string,
    groups: readonly string[],
    rule: TrustRule,
  ): MaybePromise<boolean[]>;
  /**
   * Optional, with {@link Store.release}: takes lease `lease` of `key` (docs/design.md#concurrency).
   * Leases that expired are forgotten first (a lease expires `leaseMs` after its last acquire; one
   * stamped further ahead, by a clock that stepped back, counts as taken now). A lease already held
   * is renewed and counts once; a new one is taken when fewer than `max` are held, else nothing
   * changes and the answer is refused. Holders call it again to renew (a heartbeat), which also
   * takes a lease back that expired while there is room. Leases are no window or failure state:
   * `delete`, `size` and `restamp` leave them alone.
   */
  acquire?(key: string, rule: LeaseRule, lease: string): MaybePromise<LeaseAnswer>;
  /** Optional, with {@link Store.acquire}: gives lease `lease` of `key` back (none held: nothing). */
  release?(key: string, lease: string): MaybePromise<void>;
  /**
   * Optional, with the three below: the rules of access list `list` in force (docs/design.md#access-lists),
   * with the store's own time, so that each process can tell how long a rule has left whatever
   * its own clock says. Rules that ended are left out (and may be forgotten).
   */
  accessRules?(list: string): MaybePromise<AccessListing>;
  /**
   * Optional: sets `rule` in `list`, replacing the rule of the same subject. A new subject is
   * refused (false) when `maxRules` rules are in force; nothing changes then.
   */
  putAccessRule?(list: string, rule: AccessRuleInput, maxRules: number): MaybePromise<boolean>;
  /** Optional: removes the rule of `subject` from `list`; false when there was none. */
  removeAccessRule?(list: string, subject: string): MaybePromise<boolean>;
  /**
   * Optional: calls `changed` whenever `list` changes, in this process or (a shared store with
   * a subscription) in another; returns what stops it. Without it a list is read again on a timer.
   */
  watchAccess?(list: string, changed: () => void): () => void;
  /**
   * Optional: `calls` as one store operation, answering what each named method would, in order
   * (each call sees the ones before it). The auth layers put every store call of one attempt's
   * phase (check, or count) into one batch. The memory store runs them one after another; a
   * shared store sends them together (RedisStore: one script per hash slot, so one round trip; on
   * a single Redis one script for the whole batch). A store without it gets each call made on
   * its own, at once (`batchCalls` in `@portcullis/core/adapter` does that).
   */
  batch?(calls: readonly StoreCall[]): MaybePromise<StoreAnswer[]>;
  /** Forgets `key` entirely (window, bucket, failure history and lockout). */
  delete(key: string): MaybePromise<void>;
  /**
   * How many `delete`s (resets) this store has made or, for a shared store, heard of from other
   * processes, since it was made. Optional: outcome counting reads it to give nothing back across
   * a reset (the units went with the state, and the window holds newer spends). A store without
   * it cannot tell a refund of a spend before a reset from one after it within one millisecond.
   */
  readonly deletions?: number;
  /** Number of keys held (approximate for shared stores). */
  size(): MaybePromise<number>;
  /** Releases timers and connections. The store must not be used afterwards. */
  close(): MaybePromise<void>;
}
