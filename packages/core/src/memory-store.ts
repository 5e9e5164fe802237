import { AccessTable } from './access/access-table.js';
import { fixedWindowConsume } from './algorithms/fixed-window.js';
import { type Clock, systemClock, systemTimers, type Timers } from './clock.js';
import type { Decision } from './decision.js';
import { KeyIndex } from './key-index.js';
import { FailureSlots } from './memory-failures.js';
import { WindowSlots } from './memory-windows.js';
import { integer, parseOptions, timerDelay, withMethods } from './options.js';
import { type Kind, type Slot, SlotPool } from './slot-pool.js';
import { clampSlot, hasPrefix, restampSlot } from './slot-state.js';
import type * as store from './store.js';
import { callStore } from './store-batch.js';
import { TrustTable } from './trust-table.js';
import { LeaseTable } from './lease-table.js';

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
  'checkFailures' | 'recordFailure' | 'recordSuccess' | 'recordDistinct' | 'delete' | 'ban'
>;

const memoryStoreSpec = {
  maxEntries: integer(1),
  sweepIntervalMs: timerDelay(1),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
};

/**
 * The in-process store: synchronous, bounded (`maxEntries`), lazily expiring, with at most one
 * `unref()`ed sweep timer. Every answer is a plain {@link Decision}, never a promise. This class
 * is the store's face and its clock: which algorithm reads and writes a key's window is its
 * windows' (memory-windows.ts), failure state its failures' (memory-failures.ts), what a slot's
 * state means for its expiry and protection slot-state.ts'; which keys are admitted, which go
 * when it is full, and the slots they live in are its slot pool's (slot-pool.ts).
 */
export class MemoryStore implements store.Store {
  readonly #slots = new KeyIndex<Slot>();
  /** The failure tables handed out by {@link MemoryStore.failureTable}, by name. */
  readonly #tables = new Map<string, FailureTable>();
  readonly #tableMaps: KeyIndex<Slot>[] = [];
  /** Admission, eviction order and the pooled slots of every table: see {@link SlotPool}. */
  readonly #pool: SlotPool;
  readonly #windows: WindowSlots;
  readonly #failures: FailureSlots;
  readonly #max: number;
  readonly #clock: Clock;
  readonly #timers: Timers;
  /** See {@link MemoryStore.deletions}. */
  #deletions = 0;
  /** The trust tables (see `Store.trust`), by name; bounded each by its rule's `maxTrusted`. */
  readonly #trust = new Map<string, TrustTable>();
  /** The leases of concurrency limits (see `Store.acquire`). */
  readonly #leases = new LeaseTable();
  /** The access lists (see `Store.accessRules`). */
  readonly #access = new AccessTable();
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
      clamp: (slot, now) => clampSlot(this.#pool, slot, slot.rule, now),
    });
    this.#windows = new WindowSlots(this.#pool, this.#slots);
    this.#failures = new FailureSlots(this.#pool);
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

  consume(key: string, rule: store.WindowRule, cost: number): Decision {
    const now = this.#now();
    const slot = this.#windows.live(key, rule.algorithm, now);
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
    // Every other consume (a new key, a window that rolls, the other algorithms) goes out of line,
    // so that this hot path stays small enough for V8 to inline into the limiter.
    return this.#windows.consume(key, rule, cost, now, slot);
  }

  refund(key: string, rule: store.WindowRule, cost: number, agoMs: number): void {
    this.#windows.refund(key, rule, cost, agoMs, this.#now());
  }

  peek(key: string, rule: store.WindowRule): Decision {
    return this.#windows.peek(key, rule, this.#now());
  }

  checkFailures(key: string, rule: store.FailureRule): Decision {
    return this.#failures.check(this.#slots, key, rule, this.#now());
  }

  recordFailure(key: string, rule: store.FailureRule): store.FailureDecision {
    return this.#failures.record(this.#slots, '', key, rule, this.#now());
  }

  recordSuccess(key: string, rule: store.FailureRule): Decision {
    return this.#failures.success(this.#slots, key, rule, this.#now());
  }

  recordDistinct(key: string, member: string, rule: store.FailureRule): store.FailureDecision {
    return this.#failures.record(this.#slots, '', key, rule, this.#now(), member);
  }

  /**
   * A lockout of `key` set by hand for `ms` from now (see `Store.ban`): refused, listed and lifted
   * like an earned one; a lockout in force that ends later stays as it is. When the store is full
   * of lockouts there is no room for it: the answer is `overflow`.
   */
  ban(key: string, rule: store.FailureRule, ms: number): store.FailureDecision {
    return this.#failures.ban(this.#slots, '', key, rule, ms, this.#now());
  }

  /**
   * The lockouts in force whose key (as `protectedKeys` shows it) starts with `prefix`, soonest
   * end first, at most `limit` (see `Store.lockouts`): each read under `rule` as a check would
   * read it (clamped, and forgotten when over). O(keys held).
   */
  lockouts(prefix: string, limit: number, rule: store.FailureRule): store.StoreLockout[] {
    return this.#failures.lockouts(prefix, limit, rule, this.#now());
  }

  trust(table: string, group: string, member: string, rule: store.TrustRule): void {
    let t = this.#trust.get(table);
    if (t === undefined) {
      t = new TrustTable();
      this.#trust.set(table, t);
    }
    t.add(group, member, this.#now(), rule);
  }

  trusted(
    table: string,
    member: string,
    groups: readonly string[],
    rule: store.TrustRule,
  ): boolean[] {
    const t = this.#trust.get(table);
    const now = this.#now();
    return groups.map((g) => t?.has(g, member, now, rule) === true);
  }

  acquire(key: string, rule: store.LeaseRule, lease: string): store.LeaseAnswer {
    return this.#leases.acquire(key, rule, lease, this.#now());
  }

  release(key: string, lease: string): void {
    this.#leases.release(key, lease);
  }

  accessRules(list: string): store.AccessListing {
    return this.#access.rules(list, this.#now());
  }

  putAccessRule(list: string, rule: store.AccessRuleInput, maxRules: number): boolean {
    return this.#access.put(list, rule, maxRules, this.#now());
  }

  removeAccessRule(list: string, subject: string): boolean {
    return this.#access.remove(list, subject, this.#now());
  }

  watchAccess(list: string, changed: () => void): () => void {
    return this.#access.watch(list, changed);
  }

  /**
   * The calls one after another (see `Store.batch`): in one process that is already atomic. They
   * all read the clock's time as of the batch's start, as one script on a shared store does.
   */
  batch(calls: readonly store.StoreCall[]): store.StoreAnswer[] {
    return this.atOnce(() => {
      const out: store.StoreAnswer[] = [];
      for (const c of calls) out.push(callStore(this, c) as store.StoreAnswer);
      return out;
    });
  }

  /**
   * Runs `fn` with every call of this store (and of its failure tables) reading one time, the
   * clock's as of the start: what one script on a shared store reads, at one clock read instead of
   * one per call. Nested calls keep the outer time.
   * @internal for the auth gate's layers
   */
  atOnce<T>(fn: () => T): T {
    const pinned = this.pinTime();
    try {
      return fn();
    } finally {
      if (pinned) this.unpinTime();
    }
  }

  /**
   * Starts what {@link atOnce} runs `fn` in, for a caller that makes its calls without a function:
   * true when this call pinned the time (false when it was pinned already), and must then
   * {@link unpinTime} once its calls are made, in a `finally`. `at`: a time of this store's clock
   * that another store read for the same calls (its sibling's {@link pinnedTime}), pinned instead
   * of reading the clock again.
   * @internal for the auth gate's layers
   */
  pinTime(at?: number): boolean {
    if (this.#pinned !== undefined) return false;
    this.#pinned = at === undefined ? this.#now() : this.#observe(at);
    return true;
  }

  /** The time {@link pinTime} pinned, while it holds. @internal */
  get pinnedTime(): number | undefined {
    return this.#pinned;
  }

  /** Ends what {@link pinTime} started. @internal */
  unpinTime(): void {
    this.#pinned = undefined;
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
    const failures = this.#failures;
    const view: FailureTable = {
      checkFailures: (key, rule) => failures.check(table, key, rule, this.#now()),
      recordFailure: (key, rule) => failures.record(table, prefix, key, rule, this.#now()),
      recordSuccess: (key, rule) => failures.success(table, key, rule, this.#now()),
      recordDistinct: (key, member, rule) =>
        failures.record(table, prefix, key, rule, this.#now(), member),
      ban: (key, rule, ms) => failures.ban(table, prefix, key, rule, ms, this.#now()),
      delete: (key) => {
        const slot = table.get(key);
        if (slot !== undefined) this.#pool.drop(slot);
      },
    };
    this.#tables.set(name, view);
    this.#tableMaps.push(table);
    return view;
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
    this.#access.clear();
  }

  /**
   * Re-stamps, under `after`, the state of every key whose text starts with `prefix` (`''`: every
   * key) and that `after` governs (its window algorithm, or failure state): a limiter was
   * reconfigured from `before`. What had ended under `before` goes, and failures that had expired
   * under it are forgotten (a wider window counts none of them again); the rest expires, and is
   * protected from eviction, as `after` says, so a widened window keeps its count past the end the
   * old rule stamped. Counts, starts and lockouts are kept as they are. O(keys held).
   */
  restamp(
    prefix: string,
    before: store.WindowRule | store.FailureRule,
    after: store.WindowRule | store.FailureRule,
  ): void {
    const now = this.#now();
    const kind: Kind = 'algorithm' in after ? after.algorithm : 'failure';
    for (let slot = this.#pool.oldest; slot !== undefined; ) {
      const next = slot.newer;
      if (slot.kind === kind && hasPrefix(slot, prefix))
        restampSlot(this.#pool, slot, now, before, after);
      slot = next;
    }
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
      if (slot.protectedUntil > now) clampSlot(this.#pool, slot, slot.rule, now);
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
    return this.#observe(this.#clock.now());
  }

  /** `now`, a time of the clock, as this store's latest: a step back is noticed as `#now` does. */
  #observe(now: number): number {
    if (now < this.#lastNow) this.#pool.steppedBack();
    this.#lastNow = now;
    return now;
  }
}
