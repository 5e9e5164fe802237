// The memory store's admission and eviction: which key may be held, which goes when the store is
// full, and the slots keys live in, pooled. It knows nothing of the algorithms; the store decides
// what a slot's state means and tells the pool when it expires and until when it is protected.
import type { FailureState } from './algorithms/failure-log.js';
import type { FixedWindowState } from './algorithms/fixed-window.js';
import type { SlidingWindowState } from './algorithms/sliding-window.js';
import type { TokenBucketState } from './algorithms/token-bucket.js';
import type { TimerHandle, Timers } from './clock.js';
import type { KeyIndex } from './key-index.js';
import type { FailureRule, WindowRule } from './store.js';

/** What a slot holds: a window of one algorithm, or failure state. */
export type Kind = 'fixed-window' | 'sliding-window' | 'token-bucket' | 'failure';

/**
 * The state a slot stands for, by kind.
 * @internal
 */
export type State = FixedWindowState | SlidingWindowState | TokenBucketState | FailureState;

/** The log of a slot that never held failures; never written (a failure slot gets its own). */
const NO_LOG: number[] = [];

/**
 * One key's entry, its state inside. Slots are pooled: a slot whose key went (expired, deleted,
 * evicted) is reused, failure log included, for the next new key, so a table that churns (a flood
 * of new clients) allocates nothing that lives longer than a call but the key strings themselves.
 * @internal
 */
export class Slot implements FixedWindowState, SlidingWindowState, TokenBucketState, FailureState {
  /** The table holding the slot (the store's own, or a failure table's) and the key there. */
  table: KeyIndex<Slot>;
  key = '';
  /** `table.numberOf(key)`, kept so that evicting the slot does not read its key's text again. */
  number = 0;
  /** Shown before `key` outside the table (`<scope>:` for a failure table's slots). */
  prefix = '';
  kind: Kind;
  /*
   * The state lives in the slot itself, every algorithm's fields side by side, so that a decision
   * reads one object (one cache miss on a large table) and a new key allocates nothing. Only the
   * fields of `kind` mean anything.
   */
  start = 0;
  count = 0;
  prev = 0;
  curr = 0;
  scaled = 0;
  last = 0;
  /** The failure log; the shared empty {@link NO_LOG} until the slot first holds failures. */
  log: number[] = NO_LOG;
  lockedUntil = 0;
  banMs = 0;
  step = 0;
  lastEnd = 0;
  members: string[] | undefined = undefined;
  /** From this instant the slot equals an absent one. */
  expiresAt = 0;
  /** Until this instant the slot must not be evicted (lockout or blocked window); 0 = evictable. */
  protectedUntil = 0;
  /** The rule of the last call that stored the slot (to clamp it when the clock stepped back). */
  rule: WindowRule | FailureRule;
  /** Neighbours in eviction order (oldest first); in the free list, `newer` links free slots. */
  older: Slot | undefined = undefined;
  newer: Slot | undefined = undefined;
  constructor(table: KeyIndex<Slot>, kind: Kind, rule: WindowRule | FailureRule) {
    this.table = table;
    this.kind = kind;
    this.rule = rule;
  }
}

/**
 * An empty failure log with room for one time. A distributed brute force is many clients with one
 * failure each; an array that starts empty grows to room for 17 on its first push (136 bytes per
 * client). A client that fails again grows its own log.
 */
function newLog(): number[] {
  const log = [0.5];
  log.pop();
  return log;
}

function resetFailure(state: FailureState): void {
  // pop() rather than `length = 0`, which V8 hands to the runtime: the log is short (< maxAttempts).
  const log = state.log;
  while (log.length > 0) log.pop();
  state.lockedUntil = 0;
  state.banMs = 0;
  state.step = 0;
  state.lastEnd = 0;
  state.members = undefined;
}

/**
 * What the pool needs of its store.
 * @internal
 */
export interface PoolSetup {
  /** The most keys held, in every table together. */
  readonly max: number;
  /** The sweep timer's period. */
  readonly sweepMs: number;
  readonly timers: Timers;
  /** The store's clock reading (the sweep runs at the time it reads). */
  readonly now: () => number;
  /**
   * Clamps a slot's state stamped in the future (the clock stepped back) under its own rule and
   * updates its expiry and protection: admission reads protection as an access would.
   */
  readonly clamp: (slot: Slot, now: number) => void;
}

/**
 * The slots of one store and every failure table of it: at most `max` held, in eviction order
 * (oldest first, a doubly linked list through the slots: unlinking a deleted key and evicting the
 * oldest are O(1); Map iteration cannot serve, after many deletes it walks every hole V8 leaves
 * behind), the slots whose key went kept for reuse, and at most one `unref()`ed sweep timer.
 * When full it drops expired keys first (a full sweep, only when something has expired), then the
 * oldest key that is not protected; it never evicts a protected one.
 * @internal
 */
export class SlotPool {
  /** Keys held in every table together: what `max` bounds. */
  #count = 0;
  #oldest: Slot | undefined = undefined;
  #newest: Slot | undefined = undefined;
  /** Slots whose key went, ready for reuse (linked through `newer`). */
  #free: Slot | undefined = undefined;
  /** No slot expires before this instant (a lower bound), so a full sweep before it is pointless. */
  #expiryHint = Number.POSITIVE_INFINITY;
  /** While now < this, every slot is protected and the store refuses new keys. */
  #saturatedUntil = 0;
  #sweepTimer: TimerHandle | undefined;
  #closed = false;
  readonly #setup: PoolSetup;
  readonly #max: number;
  readonly #clamp: (slot: Slot, now: number) => void;

  constructor(setup: PoolSetup) {
    this.#setup = setup;
    this.#max = setup.max;
    this.#clamp = setup.clamp;
  }

  /** The keys held. */
  get size(): number {
    return this.#count;
  }

  /** The oldest slot held; `newer` leads on to the newest. */
  get oldest(): Slot | undefined {
    return this.#oldest;
  }

  /** The clock stepped back: the saturation instant, which may lie far ahead, is forgotten. */
  steppedBack(): void {
    this.#saturatedUntil = 0;
  }

  /** A slot now expires at `expiresAt`: a sweep is due no later than then. */
  expiresAt(expiresAt: number): void {
    if (expiresAt < this.#expiryHint) this.#expiryHint = expiresAt;
  }

  /** How long a store full of protected keys refuses new ones from `now` (at least 1 ms). */
  saturatedFor(now: number): number {
    return Math.max(1, this.#saturatedUntil - now);
  }

  /**
   * A slot for a new `key` of `table` (room must have been made), reset to an absent key's state:
   * a pooled one when a key went before (its failure log emptied and kept), else a new one.
   */
  claim(
    table: KeyIndex<Slot>,
    prefix: string,
    key: string,
    kind: Kind,
    rule: WindowRule | FailureRule,
  ): Slot {
    let slot = this.#free;
    if (slot === undefined) {
      slot = new Slot(table, kind, rule);
    } else {
      this.#free = slot.newer;
      // A window state is overwritten by the caller; a failure log is emptied and kept.
      if (kind === 'failure') resetFailure(slot);
      slot.kind = kind;
      slot.rule = rule;
    }
    if (kind === 'failure' && slot.log === NO_LOG) slot.log = newLog();
    slot.table = table;
    slot.key = key;
    slot.number = table.numberOf(key);
    slot.prefix = prefix;
    slot.expiresAt = 0;
    slot.protectedUntil = 0;
    slot.older = this.#newest;
    slot.newer = undefined;
    if (this.#newest === undefined) this.#oldest = slot;
    else this.#newest.newer = slot;
    this.#newest = slot;
    table.set(key, slot);
    this.#count++;
    if (this.#sweepTimer === undefined && !this.#closed) this.#armSweep();
    return slot;
  }

  /** Forgets a held slot: out of its table and the eviction order, into the pool. */
  drop(slot: Slot): void {
    slot.table.deleteNumbered(slot.key, slot.number);
    this.#count--;
    this.#unlink(slot);
    slot.key = '';
    slot.newer = this.#free;
    this.#free = slot;
    this.#saturatedUntil = 0;
  }

  /** Whether a new key could be held now, evicting nothing. */
  hasRoom(now: number): boolean {
    if (!this.#full(now)) return true;
    if (this.#saturatedUntil > now) return false;
    let soonest = Number.POSITIVE_INFINITY;
    for (let slot = this.#oldest; slot !== undefined; slot = slot.newer) {
      if (slot.protectedUntil > now) this.#clamp(slot, now);
      if (slot.protectedUntil <= now) return true;
      if (slot.protectedUntil < soonest) soonest = slot.protectedUntil;
    }
    this.#saturatedUntil = soonest;
    return false;
  }

  /** Makes room for one new key, or reports that every key is protected. */
  admit(now: number): boolean {
    if (!this.#full(now)) return true;
    if (this.#saturatedUntil > now) return false;
    let soonest = Number.POSITIVE_INFINITY;
    let budget = this.#count;
    while (budget-- > 0) {
      const slot = this.#oldest as Slot;
      // A protection stamped in the future (the clock stepped back) is clamped like an access would.
      if (slot.protectedUntil > now) this.#clamp(slot, now);
      if (slot.protectedUntil <= now) {
        this.drop(slot);
        return true;
      }
      // A protected slot goes to the back, so the next eviction does not walk past it again.
      if (slot !== this.#newest) {
        this.#unlink(slot);
        slot.older = this.#newest;
        (this.#newest as Slot).newer = slot;
        this.#newest = slot;
      }
      if (slot.protectedUntil < soonest) soonest = slot.protectedUntil;
    }
    this.#saturatedUntil = soonest;
    return false;
  }

  /** Drops every slot expired at `now`. Returns how many went. */
  sweep(now: number): number {
    let dropped = 0;
    let hint = Number.POSITIVE_INFINITY;
    for (let slot = this.#oldest; slot !== undefined; ) {
      const next = slot.newer;
      if (now >= slot.expiresAt) {
        this.drop(slot);
        dropped++;
      } else if (slot.expiresAt < hint) {
        hint = slot.expiresAt;
      }
      slot = next;
    }
    this.#expiryHint = hint;
    return dropped;
  }

  /** Stops the sweep timer and forgets every slot (the store clears its tables). */
  close(): void {
    this.#closed = true;
    if (this.#sweepTimer !== undefined) this.#setup.timers.clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.#count = 0;
    this.#oldest = undefined;
    this.#newest = undefined;
    this.#free = undefined;
  }

  /** Whether every place is taken at `now`, once the expired keys are gone. */
  #full(now: number): boolean {
    if (this.#count < this.#max) return false;
    // A full sweep pays only if something has expired. After one the hint is the earliest expiry
    // left, later than now, so this runs at most once per clock millisecond.
    if (now >= this.#expiryHint) this.sweep(now);
    return this.#count >= this.#max;
  }

  #unlink(slot: Slot): void {
    const { older, newer } = slot;
    if (older === undefined) this.#oldest = newer;
    else older.newer = newer;
    if (newer === undefined) this.#newest = older;
    else newer.older = older;
    slot.older = undefined;
    slot.newer = undefined;
  }

  #armSweep(): void {
    this.#sweepTimer = this.#setup.timers.setTimeout(() => {
      this.#sweepTimer = undefined;
      if (this.#closed) return;
      this.sweep(this.#setup.now());
      if (this.#count > 0) this.#armSweep();
    }, this.#setup.sweepMs);
  }
}
