import {
  fixedWindowBlockedUntil,
  fixedWindowClamp,
  fixedWindowConsume,
  fixedWindowExpiresAt,
  fixedWindowPeek,
  fixedWindowRefund,
  fixedWindowRoll,
  type FixedWindowState,
} from './algorithms/fixed-window.js';
import {
  failureCheck,
  failureClamp,
  failureBan,
  failureExpiresAt,
  failurePrune,
  failureRecord,
  failureRoll,
  failureRecordDistinct,
  failureSuccess,
} from './algorithms/failure-log.js';
import {
  slidingWindowBlockedUntil,
  slidingWindowClamp,
  slidingWindowConsume,
  slidingWindowExpiresAt,
  slidingWindowPeek,
  slidingWindowRefund,
  slidingWindowRoll,
  type SlidingWindowState,
} from './algorithms/sliding-window.js';
import {
  tokenBucketBlockedUntil,
  tokenBucketClamp,
  tokenBucketConsume,
  tokenBucketExpiresAt,
  tokenBucketPeek,
  tokenBucketRefund,
  tokenBucketRoll,
  type TokenBucketState,
} from './algorithms/token-bucket.js';
import { type Clock, systemClock, systemTimers, type Timers } from './clock.js';
import { type Decision, decision } from './decision.js';
import { KeyIndex } from './key-index.js';
import { integer, parseOptions, timerDelay, withMethods } from './options.js';
import { type Kind, Slot, SlotPool, type State } from './slot-pool.js';
import {
  byEnd,
  type FailureDecision,
  type FailureRule,
  type Store,
  type StoreAnswer,
  type StoreCall,
  type StoreLockout,
  type TrustRule,
  type WindowRule,
} from './store.js';
import { callStore } from './store-batch.js';
import { TrustTable } from './trust-table.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Most keys held at once. When full, expired keys go first, then the oldest key that is not
   * locked out or blocked; an active lockout is never forgotten.
   * @default 10_000
   */
  maxEntries?: number;
  /**
   * How often the single background sweep drops expired keys: an integer from 1 to 2^31 − 1 (the
   * longest delay a Node timer holds; a longer one would fire after 1 ms). @default 60_000
   */
  sweepIntervalMs?: number;
  /** Time source. @default systemClock */
  clock?: Clock;
  /** Timer functions for the sweep. @default systemTimers (unref'ed) */
  timers?: Timers;
}

/**
 * The failure methods of a {@link MemoryStore} over one of its failure tables (see
 * {@link MemoryStore.failureTable}).
 * @internal
 */
export type FailureTable = Pick<
  MemoryStore,
  'checkFailures' | 'recordFailure' | 'recordSuccess' | 'delete' | 'ban'
>;

/**
 * What a window call gets instead of a key's failure state (see `#live`): its start lies in the
 * future, so the hot path's window test never passes and the call goes where it is refused.
 */
const HELD = new Slot(new KeyIndex<Slot>(), 'fixed-window', {
  algorithm: 'fixed-window',
  limit: 1,
  windowMs: 1,
});
HELD.start = Number.POSITIVE_INFINITY;

const memoryStoreSpec = {
  maxEntries: integer(1),
  sweepIntervalMs: timerDelay(1),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
};

/**
 * The in-process store: synchronous, bounded (`maxEntries`), lazily expiring, with at most one
 * `unref()`ed sweep timer. Every answer is a plain {@link Decision}, never a promise. This class
 * is the algorithm dispatch: which algorithm reads and writes a key's state, and what that state
 * means for its expiry and protection; which keys are admitted, which go when it is full, and
 * the slots they live in are its slot pool's (slot-pool.ts).
 */
export class MemoryStore implements Store {
  readonly #slots = new KeyIndex<Slot>();
  /** The failure tables handed out by {@link MemoryStore.failureTable}, by name. */
  readonly #tables = new Map<string, FailureTable>();
  readonly #tableMaps: KeyIndex<Slot>[] = [];
  /** Admission, eviction order and the pooled slots of every table: see {@link SlotPool}. */
  readonly #pool: SlotPool;
  /** Scratch state for a new key's first call, so that a refused first call allocates nothing. */
  readonly #scratchFixed: FixedWindowState = { start: 0, count: 0 };
  readonly #scratchSliding: SlidingWindowState = { start: 0, prev: 0, curr: 0 };
  readonly #scratchBucket: TokenBucketState = { scaled: 0, last: 0 };
  readonly #max: number;
  readonly #clock: Clock;
  readonly #timers: Timers;
  /** See {@link MemoryStore.deletions}. */
  #deletions = 0;
  /** The trust tables (see `Store.trust`), by name; bounded each by its rule's `maxTrusted`. */
  readonly #trust = new Map<string, TrustTable>();
  /** The end of the failure state {@link HELD} stands for, set by the call that met it. */
  #heldUntil = 0;
  /** The latest time read from the clock: a later read below it means the clock stepped back. */
  #lastNow = Number.NEGATIVE_INFINITY;
  /** The time every call of a running `batch` reads. */
  #pinned: number | undefined = undefined;

  /** @param options see {@link MemoryStoreOptions} */
  constructor(options?: MemoryStoreOptions) {
    const o = parseOptions(options, memoryStoreSpec, 'MemoryStore');
    this.#max = o.maxEntries ?? 10_000;
    this.#clock = o.clock ?? systemClock;
    this.#timers = o.timers ?? systemTimers;
    this.#pool = new SlotPool({
      max: this.#max,
      sweepMs: o.sweepIntervalMs ?? 60_000,
      timers: this.#timers,
      now: () => this.#now(),
      clamp: (slot, now) => this.#clamp(slot, slot.rule, now),
    });
  }

  /** The most keys this store holds. */
  get maxEntries(): number {
    return this.#max;
  }

  /**
   * A new, empty store with this one's bound, clock and timers: for a class of keys that must have
   * a budget of its own (a browser flood must not evict or crowd out other clients' keys).
   * @internal for the gates' browser budgets
   */
  sibling(): MemoryStore {
    return new MemoryStore({ maxEntries: this.#max, clock: this.#clock, timers: this.#timers });
  }

  consume(key: string, rule: WindowRule, cost: number): Decision {
    const now = this.#now();
    const slot = this.#live(this.#slots, key, rule.algorithm, now);
    if (
      slot !== undefined &&
      rule.algorithm === 'fixed-window' &&
      slot.start <= now &&
      slot.expiresAt === slot.start + rule.windowMs
    ) {
      // The hot path: a live fixed window only counts; its start and expiry do not move. (A live
      // slot ends after now, so the expiry test means this call's window has not ended either. It
      // uses this call's rule, so a key met again under a shorter window rolls; under a longer one,
      // whose expiry must move, it goes the slow way, as the Redis script does; so does a start in
      // the future, left by a clock that stepped back, which is clamped.)
      const d = fixedWindowConsume(slot, now, rule, cost, key);
      if (d.allowed && slot.count >= rule.limit) slot.protectedUntil = slot.expiresAt;
      return d;
    }
    return this.#consumeSlow(key, rule, cost, now, slot);
  }

  /** Every other consume: a new key, a window that rolls, the other algorithms. Kept apart so
   * that the hot path above stays small enough for V8 to inline into the limiter. */
  #consumeSlow(
    key: string,
    rule: WindowRule,
    cost: number,
    now: number,
    slot: Slot | undefined,
  ): Decision {
    if (slot === HELD) return this.#held(key, rule, now);
    switch (rule.algorithm) {
      case 'fixed-window': {
        const state =
          slot === undefined
            ? freshFixed(this.#scratchFixed, now)
            : fixedWindowRoll(slot, now, rule);
        const d = fixedWindowConsume(state, now, rule, cost, key);
        return this.#store(
          key,
          slot,
          'fixed-window',
          state,
          d,
          now,
          fixedWindowExpiresAt(state, rule),
          fixedWindowBlockedUntil(state, rule),
          rule,
        );
      }
      case 'sliding-window': {
        const state =
          slot === undefined
            ? freshSliding(this.#scratchSliding, now)
            : slidingWindowRoll(slot, now, rule);
        const d = slidingWindowConsume(state, now, rule, cost, key);
        return this.#store(
          key,
          slot,
          'sliding-window',
          state,
          d,
          now,
          slidingWindowExpiresAt(state, rule),
          slidingWindowBlockedUntil(state, now, rule),
          rule,
        );
      }
      default: {
        const state =
          slot === undefined
            ? freshBucket(this.#scratchBucket, now, rule)
            : tokenBucketRoll(slot, now, rule);
        const d = tokenBucketConsume(state, now, rule, cost, key);
        return this.#store(
          key,
          slot,
          'token-bucket',
          state,
          d,
          now,
          tokenBucketExpiresAt(state, rule),
          tokenBucketBlockedUntil(state, rule),
          rule,
        );
      }
    }
  }

  refund(key: string, rule: WindowRule, cost: number, agoMs: number): void {
    const now = this.#now();
    const slot = this.#slots.get(key);
    // Nothing to give back to a key that is gone or holds another kind of state (a lockout).
    if (slot === undefined || slot.kind !== rule.algorithm || now >= slot.expiresAt) return;
    this.#clamp(slot, rule, now);
    switch (rule.algorithm) {
      case 'fixed-window': {
        fixedWindowRefund(slot, now, rule, cost, agoMs);
        this.#put(slot, slot, now, slot.expiresAt, fixedWindowBlockedUntil(slot, rule), rule);
        return;
      }
      case 'sliding-window': {
        const state = slidingWindowRoll(slot, now, rule);
        slidingWindowRefund(state, now, rule, cost, agoMs);
        this.#put(
          slot,
          state,
          now,
          slidingWindowExpiresAt(state, rule),
          slidingWindowBlockedUntil(state, now, rule),
          rule,
        );
        return;
      }
      default: {
        const touched = slot.last > now - agoMs;
        const state = tokenBucketRoll(slot, now, rule);
        tokenBucketRefund(state, rule, cost, agoMs, touched);
        this.#put(
          slot,
          state,
          now,
          tokenBucketExpiresAt(state, rule),
          tokenBucketBlockedUntil(state, rule),
          rule,
        );
      }
    }
  }

  peek(key: string, rule: WindowRule): Decision {
    const now = this.#now();
    const slot = this.#live(this.#slots, key, rule.algorithm, now);
    if (slot === HELD) return this.#held(key, rule, now);
    if (slot === undefined && !this.#pool.hasRoom(now)) return this.#overflow(key, rule.limit, now);
    // A state stamped in the future is clamped and kept clamped, as the Redis script does.
    if (slot !== undefined) this.#clamp(slot, rule, now);
    switch (rule.algorithm) {
      case 'fixed-window':
        return fixedWindowPeek(slot, now, rule, key);
      case 'sliding-window':
        return slidingWindowPeek(slot, now, rule, key);
      default:
        return tokenBucketPeek(slot, now, rule, key);
    }
  }

  checkFailures(key: string, rule: FailureRule): Decision {
    return this.#checkFailures(this.#slots, key, rule);
  }

  recordFailure(key: string, rule: FailureRule): FailureDecision {
    return this.#recordFailure(this.#slots, '', key, rule);
  }

  recordSuccess(key: string, rule: FailureRule): Decision {
    return this.#recordSuccess(this.#slots, key, rule);
  }

  recordDistinct(key: string, member: string, rule: FailureRule): FailureDecision {
    const now = this.#now();
    let slot = this.#liveFailure(this.#slots, key, now, rule);
    if (slot === undefined) {
      if (!this.#pool.admit(now)) return this.#overflow(key, rule.maxAttempts, now);
      slot = this.#pool.claim(this.#slots, '', key, 'failure', rule);
    }
    const d = failureRecordDistinct(slot, now, rule, key, member);
    this.#put(slot, slot, now, failureExpiresAt(slot, rule), slot.lockedUntil, rule);
    return d;
  }

  trust(table: string, group: string, member: string, rule: TrustRule): void {
    let t = this.#trust.get(table);
    if (t === undefined) {
      t = new TrustTable();
      this.#trust.set(table, t);
    }
    t.add(group, member, this.#now(), rule);
  }

  trusted(table: string, member: string, groups: readonly string[], rule: TrustRule): boolean[] {
    const t = this.#trust.get(table);
    const now = this.#now();
    return groups.map((g) => t?.has(g, member, now, rule) === true);
  }

  /**
   * The calls one after another (see `Store.batch`): in one process that is already atomic. They
   * all read the clock's time as of the batch's start, as one script on a shared store does.
   */
  batch(calls: readonly StoreCall[]): StoreAnswer[] {
    this.#pinned = this.#now();
    try {
      const out: StoreAnswer[] = [];
      for (const c of calls) out.push(callStore(this, c) as StoreAnswer);
      return out;
    } finally {
      this.#pinned = undefined;
    }
  }

  /**
   * A failure table of its own for keys that all share one prefix (a failure limiter's scope), in
   * this store's bound and eviction order: its keys need no `<name>:` prepended per call, which on
   * a flood of new clients cost more than the rest of the decision (a concatenated key is a new
   * string that each map operation must flatten and hash). `protectedKeys()` shows its keys as
   * `<name>:<key>`; the store's own methods do not see them. At most 64 tables per store: past that
   * it returns undefined and the caller keeps prefixing keys.
   * @internal for the failure limiter's private store
   */
  failureTable(name: string): FailureTable | undefined {
    const known = this.#tables.get(name);
    if (known !== undefined || this.#tables.size >= 64) return known;
    const table = new KeyIndex<Slot>();
    const prefix = `${name}:`;
    const view: FailureTable = {
      checkFailures: (key, rule) => this.#checkFailures(table, key, rule),
      recordFailure: (key, rule) => this.#recordFailure(table, prefix, key, rule),
      recordSuccess: (key, rule) => this.#recordSuccess(table, key, rule),
      ban: (key, rule, ms) => this.#ban(table, prefix, key, rule, ms),
      delete: (key) => {
        const slot = table.get(key);
        if (slot !== undefined) this.#pool.drop(slot);
      },
    };
    this.#tables.set(name, view);
    this.#tableMaps.push(table);
    return view;
  }

  #checkFailures(table: KeyIndex<Slot>, key: string, rule: FailureRule): Decision {
    const now = this.#now();
    const slot = this.#liveFailure(table, key, now, rule);
    if (slot === undefined && !this.#pool.hasRoom(now))
      return this.#overflow(key, rule.maxAttempts, now);
    return failureCheck(slot, now, rule, key);
  }

  #recordFailure(
    table: KeyIndex<Slot>,
    prefix: string,
    key: string,
    rule: FailureRule,
  ): FailureDecision {
    const now = this.#now();
    let slot = this.#liveFailure(table, key, now, rule);
    if (slot === undefined) {
      if (!this.#pool.admit(now)) return this.#overflow(key, rule.maxAttempts, now);
      slot = this.#pool.claim(table, prefix, key, 'failure', rule);
    }
    const d = failureRecord(slot, now, rule, key);
    this.#put(slot, slot, now, failureExpiresAt(slot, rule), slot.lockedUntil, rule);
    return d;
  }

  #recordSuccess(table: KeyIndex<Slot>, key: string, rule: FailureRule): Decision {
    const now = this.#now();
    const slot = this.#liveFailure(table, key, now, rule);
    const d = failureSuccess(slot, now, rule, key);
    // A lockout in force stays; otherwise the failure history goes.
    if (slot !== undefined && d.allowed) this.#pool.drop(slot);
    return d;
  }

  /**
   * A lockout of `key` set by hand for `ms` from now (see `Store.ban`): refused, listed and lifted
   * like an earned one; a lockout in force that ends later stays as it is. When the store is full
   * of lockouts there is no room for it: the answer is `overflow`.
   */
  ban(key: string, rule: FailureRule, ms: number): FailureDecision {
    return this.#ban(this.#slots, '', key, rule, ms);
  }

  #ban(
    table: KeyIndex<Slot>,
    prefix: string,
    key: string,
    rule: FailureRule,
    ms: number,
  ): FailureDecision {
    const now = this.#now();
    let slot = this.#liveFailure(table, key, now, rule);
    if (slot === undefined) {
      if (!this.#pool.admit(now)) return this.#overflow(key, rule.maxAttempts, now);
      slot = this.#pool.claim(table, prefix, key, 'failure', rule);
    }
    const d = failureBan(slot, now, rule, ms, key);
    this.#put(slot, slot, now, failureExpiresAt(slot, rule), slot.lockedUntil, rule);
    return d;
  }

  /**
   * The lockouts in force whose key (as `protectedKeys` shows it) starts with `prefix`, soonest
   * end first, at most `limit` (see `Store.lockouts`): each read under `rule` as a check would
   * read it (clamped, and forgotten when over). O(keys held).
   */
  lockouts(prefix: string, limit: number, rule: FailureRule): StoreLockout[] {
    const now = this.#now();
    // The candidates, as the Redis store's index holds them: failure state locked past now.
    // Collected first: reading one that turns out over forgets its slot.
    const held: { slot: Slot; key: string; until: number }[] = [];
    for (let slot = this.#pool.oldest; slot !== undefined; slot = slot.newer) {
      if (slot.kind === 'failure' && slot.lockedUntil > now && hasPrefix(slot, prefix))
        held.push({ slot, key: slot.prefix + slot.key, until: slot.lockedUntil });
    }
    held.sort(byEnd);
    // Read as a check reads them (clamped), soonest first, only as many as are listed: the Redis
    // store reads the same ones, so both leave the same state behind.
    const found: StoreLockout[] = [];
    for (const { slot, key } of held) {
      if (found.length >= limit) break;
      const live = this.#liveFailure(slot.table, slot.key, now, rule);
      if (live === undefined || live.lockedUntil <= now) continue;
      found.push({
        key,
        until: live.lockedUntil,
        retryAfterMs: live.lockedUntil - now,
        ban: live.banMs > 0,
      });
    }
    found.sort(byEnd);
    return found;
  }

  delete(key: string): void {
    this.#deletions++;
    const slot = this.#slots.get(key);
    if (slot !== undefined) this.#pool.drop(slot);
  }

  /** How many `delete`s (resets) this store has made: see `Store.deletions`. */
  get deletions(): number {
    return this.#deletions;
  }

  size(): number {
    return this.#pool.size;
  }

  close(): void {
    this.#pool.close();
    this.#slots.clear();
    for (const table of this.#tableMaps) table.clear();
  }

  /**
   * Re-stamps, under `after`, the state of every key whose text starts with `prefix` (`''`: every
   * key) and that `after` governs (its window algorithm, or failure state): a limiter was
   * reconfigured from `before`. What had ended under `before` goes, and failures that had expired
   * under it are forgotten (a wider window counts none of them again); the rest expires, and is
   * protected from eviction, as `after` says, so a widened window keeps its count past the end the
   * old rule stamped. Counts, starts and lockouts are kept as they are. O(keys held).
   */
  restamp(prefix: string, before: WindowRule | FailureRule, after: WindowRule | FailureRule): void {
    const now = this.#now();
    const kind: Kind = 'algorithm' in after ? after.algorithm : 'failure';
    for (let slot = this.#pool.oldest; slot !== undefined; ) {
      const next = slot.newer;
      if (slot.kind === kind && hasPrefix(slot, prefix))
        this.#restampSlot(slot, now, before, after);
      slot = next;
    }
  }

  #restampSlot(
    slot: Slot,
    now: number,
    before: WindowRule | FailureRule,
    after: WindowRule | FailureRule,
  ): void {
    if (now >= slot.expiresAt) {
      this.#pool.drop(slot);
      return;
    }
    let expiresAt: number;
    let protectedUntil = 0;
    switch (slot.kind) {
      case 'fixed-window': {
        const rule = after as WindowRule;
        expiresAt = fixedWindowExpiresAt(slot, rule);
        protectedUntil = fixedWindowBlockedUntil(slot, rule);
        break;
      }
      case 'sliding-window': {
        const rule = after as WindowRule;
        expiresAt = slidingWindowExpiresAt(slot, rule);
        const rolled = slidingWindowRoll(
          { start: slot.start, prev: slot.prev, curr: slot.curr },
          now,
          rule,
        );
        protectedUntil = slidingWindowBlockedUntil(rolled, now, rule);
        break;
      }
      case 'token-bucket': {
        const rule = after as WindowRule;
        // A bucket fuller than the new capacity holds a full one (as the next read caps it).
        const capped = {
          scaled: Math.min(slot.scaled, rule.limit * rule.windowMs),
          last: slot.last,
        };
        expiresAt = tokenBucketExpiresAt(capped, rule);
        protectedUntil = tokenBucketBlockedUntil(capped, rule);
        break;
      }
      default: {
        if (slot.lockedUntil !== 0) {
          // A lockout keeps its end (a lowered lockoutMs caps it when it is read, as before).
          slot.rule = after;
          return;
        }
        failurePrune(slot, now, (before as FailureRule).windowMs);
        if (slot.log.length === 0) {
          this.#pool.drop(slot);
          return;
        }
        expiresAt = failureExpiresAt(slot, after as FailureRule);
      }
    }
    if (expiresAt <= now) {
      this.#pool.drop(slot);
      return;
    }
    slot.expiresAt = expiresAt;
    slot.protectedUntil = protectedUntil > now ? protectedUntil : 0;
    slot.rule = after;
    this.#pool.expiresAt(expiresAt);
  }

  /** Drops every expired key now (the background sweep calls this). Returns how many went. */
  sweep(): number {
    return this.#pool.sweep(this.#now());
  }

  /** Read-only view of the keys under lockout or block, for status pages. */
  *protectedKeys(): IterableIterator<{ key: string; kind: Kind; untilMs: number }> {
    const now = this.#now();
    // Collected before the first yield: a caller may delete keys between two (an "unlock all"),
    // and a deleted slot's link leads into the free list.
    const found: { key: string; kind: Kind; untilMs: number }[] = [];
    for (let slot = this.#pool.oldest; slot !== undefined; slot = slot.newer) {
      if (slot.protectedUntil > now) this.#clamp(slot, slot.rule, now);
      if (slot.protectedUntil > now)
        found.push({
          key: slot.prefix + slot.key,
          kind: slot.kind,
          untilMs: slot.protectedUntil - now,
        });
    }
    yield* found;
  }

  /** The clock's time; a step back forgets the saturation instant, which may lie far ahead. */
  #now(): number {
    if (this.#pinned !== undefined) return this.#pinned;
    const now = this.#clock.now();
    if (now < this.#lastNow) this.#pool.steppedBack();
    this.#lastNow = now;
    return now;
  }

  /**
   * Clamps a live slot's state stamped in the future (the clock stepped back) and, when that
   * changed anything, its expiry and protection. The slot's kind must match `rule`.
   */
  #clamp(slot: Slot, rule: WindowRule | FailureRule, now: number): void {
    let expiresAt: number;
    let protectedUntil: number;
    switch (slot.kind) {
      case 'fixed-window': {
        if (!fixedWindowClamp(slot, now)) return;
        expiresAt = fixedWindowExpiresAt(slot, rule as WindowRule);
        protectedUntil = fixedWindowBlockedUntil(slot, rule as WindowRule);
        break;
      }
      case 'sliding-window': {
        if (!slidingWindowClamp(slot, now)) return;
        expiresAt = slidingWindowExpiresAt(slot, rule as WindowRule);
        protectedUntil = slidingWindowBlockedUntil(slot, now, rule as WindowRule);
        break;
      }
      case 'token-bucket': {
        if (!tokenBucketClamp(slot, now)) return;
        expiresAt = tokenBucketExpiresAt(slot, rule as WindowRule);
        protectedUntil = tokenBucketBlockedUntil(slot, rule as WindowRule);
        break;
      }
      default: {
        if (!failureClamp(slot, now, rule as FailureRule)) return;
        expiresAt = failureExpiresAt(slot, rule as FailureRule);
        protectedUntil = slot.lockedUntil;
      }
    }
    slot.expiresAt = expiresAt;
    slot.protectedUntil = protectedUntil > now ? protectedUntil : 0;
    this.#pool.expiresAt(expiresAt);
  }

  #live(table: KeyIndex<Slot>, key: string, kind: Kind, now: number): Slot | undefined {
    const slot = table.get(key);
    if (slot === undefined) return undefined;
    // The rest goes out of line: the hot path stays small enough for V8 to inline.
    if (slot.kind !== kind || now >= slot.expiresAt) return this.#notLive(slot, kind, now);
    return slot;
  }

  /** A slot of another kind, or one that has expired: dropped, or {@link HELD} (see below). */
  #notLive(slot: Slot, kind: Kind, now: number): Slot | undefined {
    // A window call never erases live failure state: its key may be the client's to choose, and
    // a failure limiter sharing the store and the name would lose a lockout to it. The window
    // call is answered from the sentinel instead (refused until the failure state ends). Another
    // window algorithm (a rule changed algorithm), or a window under a failure key, means nothing
    // under this rule and goes.
    if (now < slot.expiresAt && slot.kind === 'failure' && kind !== 'failure') {
      this.#heldUntil = slot.expiresAt;
      return HELD;
    }
    this.#pool.drop(slot);
    return undefined;
  }

  /** A window call on a key that holds failure state: refused, nothing changed or stored. */
  #held(key: string, rule: WindowRule, now: number): Decision {
    const wait = this.#heldUntil - now;
    return decision(false, 'limited', rule.limit, 0, wait, wait, key);
  }

  #liveFailure(
    table: KeyIndex<Slot>,
    key: string,
    now: number,
    rule: FailureRule,
  ): Slot | undefined {
    const slot = this.#live(table, key, 'failure', now);
    if (slot === undefined) return undefined;
    this.#clamp(slot, rule, now);
    const logged = slot.log.length;
    const wasLocked = slot.lockedUntil !== 0;
    const state = failureRoll(slot, now, rule);
    if (state === undefined) {
      this.#pool.drop(slot);
      return undefined;
    }
    // A roll may start a lockout (a lowered maxAttempts): it must be protected like any other.
    if (state.lockedUntil > slot.protectedUntil) {
      slot.protectedUntil = state.lockedUntil;
      slot.expiresAt = failureExpiresAt(state, rule);
    } else if (state.log.length !== logged || (wasLocked && state.lockedUntil === 0)) {
      // Expired failures went: the log now expires by this rule, as the Redis script rewrites it.
      slot.expiresAt = failureExpiresAt(state, rule);
      this.#pool.expiresAt(slot.expiresAt);
    }
    return slot;
  }

  #store(
    key: string,
    slot: Slot | undefined,
    kind: Kind,
    state: State,
    d: Decision,
    now: number,
    expiresAt: number,
    protectedUntil: number,
    rule: WindowRule,
  ): Decision {
    if (slot === undefined) {
      // A refused first call changes nothing, so there is nothing to remember.
      if (!d.allowed) return d;
      if (expiresAt <= now) return d;
      if (!this.#pool.admit(now)) return this.#overflow(key, d.limit, now);
      const fresh = this.#pool.claim(this.#slots, '', key, kind, rule);
      copyState(kind, state, fresh);
      this.#put(fresh, fresh, now, expiresAt, protectedUntil, rule);
      return d;
    }
    this.#put(slot, state, now, expiresAt, protectedUntil, rule);
    return d;
  }

  /** Records a live slot's new state, or forgets the slot when the state equals an absent one. */
  #put(
    slot: Slot,
    state: State,
    now: number,
    expiresAt: number,
    protectedUntil: number,
    rule: WindowRule | FailureRule,
  ): void {
    if (expiresAt <= now) {
      // The state already equals an absent one (a bucket full again): forget it now, as the Redis
      // script deletes it, so that a clock stepping back cannot bring it back to life.
      this.#pool.drop(slot);
      return;
    }
    // A roll that started a new fixed window made a new state object: its fields move in.
    if (state !== slot) copyState(slot.kind, state, slot);
    slot.expiresAt = expiresAt;
    slot.protectedUntil = protectedUntil > now ? protectedUntil : 0;
    slot.rule = rule;
    this.#pool.expiresAt(expiresAt);
  }

  #overflow(key: string, limit: number, now: number): Decision {
    const wait = this.#pool.saturatedFor(now);
    return decision(false, 'overflow', limit, 0, wait, wait, key);
  }
}

/** A fresh fixed window at `now`, written into `into` (what {@link fixedWindowRoll} makes of no state). */
function freshFixed(into: FixedWindowState, now: number): FixedWindowState {
  into.start = now;
  into.count = 0;
  return into;
}

/** A fresh sliding window at `now` (what {@link slidingWindowRoll} makes of no state). */
function freshSliding(into: SlidingWindowState, now: number): SlidingWindowState {
  into.start = now;
  into.prev = 0;
  into.curr = 0;
  return into;
}

/** A full bucket at `now` (what {@link tokenBucketRoll} makes of no state). */
function freshBucket(into: TokenBucketState, now: number, rule: WindowRule): TokenBucketState {
  into.scaled = rule.limit * rule.windowMs;
  into.last = now;
  return into;
}

/** Whether the key a slot shows outside its table (`<scope>:<key>` in a failure table) starts with `prefix`. */
function hasPrefix(slot: Slot, prefix: string): boolean {
  if (prefix === '') return true;
  if (slot.prefix === '') return slot.key.startsWith(prefix);
  return (slot.prefix + slot.key).startsWith(prefix);
}

/** Copies a window state field by field (from a scratch state into a slot's own object). */
function copyState(kind: Kind, from: State, to: State): void {
  switch (kind) {
    case 'fixed-window':
      (to as FixedWindowState).start = (from as FixedWindowState).start;
      (to as FixedWindowState).count = (from as FixedWindowState).count;
      return;
    case 'sliding-window':
      (to as SlidingWindowState).start = (from as SlidingWindowState).start;
      (to as SlidingWindowState).prev = (from as SlidingWindowState).prev;
      (to as SlidingWindowState).curr = (from as SlidingWindowState).curr;
      return;
    case 'token-bucket':
      (to as TokenBucketState).scaled = (from as TokenBucketState).scaled;
      (to as TokenBucketState).last = (from as TokenBucketState).last;
      return;
    default:
      throw new Error('unreachable: a failure state is never copied');
  }
}
