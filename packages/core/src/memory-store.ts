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
  failureExpiresAt,
  failureRecord,
  failureRoll,
  type FailureState,
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
import { type Clock, systemClock, systemTimers, type TimerHandle, type Timers } from './clock.js';
import { type Decision, decision } from './decision.js';
import { integer, parseOptions, withMethods } from './options.js';
import type { FailureDecision, FailureRule, Store, WindowRule } from './store.js';

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

type Kind = 'fixed-window' | 'sliding-window' | 'token-bucket' | 'failure';

interface Slot {
  kind: Kind;
  /** Creation number: tells this slot's entry in the eviction queue from a stale one. */
  seq: number;
  state: FixedWindowState | SlidingWindowState | TokenBucketState | FailureState;
  /** From this instant the slot equals an absent one. */
  expiresAt: number;
  /** Until this instant the slot must not be evicted (lockout or blocked window); 0 = evictable. */
  protectedUntil: number;
  /** The rule of the last call that stored the slot (to clamp it when the clock stepped back). */
  rule: WindowRule | FailureRule;
}

/** The longest delay a Node timer holds; a longer one fires after 1 ms instead. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const memoryStoreSpec = {
  maxEntries: integer(1),
  sweepIntervalMs: integer(1, MAX_TIMER_MS),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
};

/**
 * The in-process store: synchronous, bounded (`maxEntries`), lazily expiring, with at most one
 * `unref()`ed sweep timer. Every answer is a plain {@link Decision}, never a promise.
 */
export class MemoryStore implements Store {
  readonly #slots = new Map<string, Slot>();
  /*
   * Eviction order (oldest first) as a queue of key + creation number. Map iteration cannot serve:
   * after many deletes it walks over every hole V8 leaves behind, which made eviction O(n).
   */
  #queueKeys: string[] = [];
  #queueSeqs: number[] = [];
  #head = 0;
  #seq = 0;
  readonly #max: number;
  readonly #sweepMs: number;
  readonly #clock: Clock;
  readonly #timers: Timers;
  #sweepTimer: TimerHandle | undefined;
  /** No slot expires before this instant (a lower bound), so a full sweep before it is pointless. */
  #expiryHint = Number.POSITIVE_INFINITY;
  /** While now < this, every slot is protected and the store refuses new keys. */
  #saturatedUntil = 0;
  /** The latest time read from the clock: a later read below it means the clock stepped back. */
  #lastNow = Number.NEGATIVE_INFINITY;
  #closed = false;

  /** @param options see {@link MemoryStoreOptions} */
  constructor(options?: MemoryStoreOptions) {
    const o = parseOptions(options, memoryStoreSpec, 'MemoryStore');
    this.#max = o.maxEntries ?? 10_000;
    this.#sweepMs = o.sweepIntervalMs ?? 60_000;
    this.#clock = o.clock ?? systemClock;
    this.#timers = o.timers ?? systemTimers;
  }

  /** The most keys this store holds. */
  get maxEntries(): number {
    return this.#max;
  }

  /**
   * A new, empty store with this one's bound, clock and timers: for a class of keys that must have
   * a budget of its own (a browser flood must not evict or crowd out other clients' keys).
   */
  sibling(): MemoryStore {
    return new MemoryStore({ maxEntries: this.#max, clock: this.#clock, timers: this.#timers });
  }

  consume(key: string, rule: WindowRule, cost: number): Decision {
    const now = this.#now();
    const slot = this.#live(key, rule.algorithm, now);
    if (
      slot !== undefined &&
      rule.algorithm === 'fixed-window' &&
      now < (slot.state as FixedWindowState).start + rule.windowMs &&
      (slot.state as FixedWindowState).start <= now &&
      slot.expiresAt === (slot.state as FixedWindowState).start + rule.windowMs
    ) {
      // The hot path: a live fixed window only counts; its start and expiry do not move. (The
      // window test above uses this call's rule, so a key met again under a shorter window rolls;
      // under a longer one, whose expiry must move, it goes the slow way, as the Redis script does;
      // so does a start in the future, left by a clock that stepped back, which is clamped.)
      const state = slot.state as FixedWindowState;
      const d = fixedWindowConsume(state, now, rule, cost, key);
      if (d.allowed && state.count >= rule.limit) slot.protectedUntil = slot.expiresAt;
      return d;
    }
    switch (rule.algorithm) {
      case 'fixed-window': {
        const state = fixedWindowRoll(slot?.state as FixedWindowState | undefined, now, rule);
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
        const state = slidingWindowRoll(slot?.state as SlidingWindowState | undefined, now, rule);
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
        const state = tokenBucketRoll(slot?.state as TokenBucketState | undefined, now, rule);
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
        const state = slot.state as FixedWindowState;
        fixedWindowRefund(state, now, rule, cost, agoMs);
        this.#put(
          key,
          slot,
          'fixed-window',
          state,
          now,
          slot.expiresAt,
          fixedWindowBlockedUntil(state, rule),
          rule,
        );
        return;
      }
      case 'sliding-window': {
        const state = slidingWindowRoll(slot.state as SlidingWindowState, now, rule);
        slidingWindowRefund(state, now, rule, cost, agoMs);
        this.#put(
          key,
          slot,
          'sliding-window',
          state,
          now,
          slidingWindowExpiresAt(state, rule),
          slidingWindowBlockedUntil(state, now, rule),
          rule,
        );
        return;
      }
      default: {
        const state = tokenBucketRoll(slot.state as TokenBucketState, now, rule);
        tokenBucketRefund(state, rule, cost);
        this.#put(
          key,
          slot,
          'token-bucket',
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
    const slot = this.#live(key, rule.algorithm, now);
    if (slot === undefined && !this.#hasRoom(now)) return this.#overflow(key, rule.limit, now);
    // A state stamped in the future is clamped and kept clamped, as the Redis script does.
    if (slot !== undefined) this.#clamp(slot, rule, now);
    switch (rule.algorithm) {
      case 'fixed-window':
        return fixedWindowPeek(slot?.state as FixedWindowState | undefined, now, rule, key);
      case 'sliding-window':
        return slidingWindowPeek(slot?.state as SlidingWindowState | undefined, now, rule, key);
      default:
        return tokenBucketPeek(slot?.state as TokenBucketState | undefined, now, rule, key);
    }
  }

  checkFailures(key: string, rule: FailureRule): Decision {
    const now = this.#now();
    const slot = this.#liveFailure(key, now, rule);
    if (slot === undefined && !this.#hasRoom(now))
      return this.#overflow(key, rule.maxAttempts, now);
    return failureCheck(slot?.state as FailureState | undefined, now, rule, key);
  }

  recordFailure(key: string, rule: FailureRule): FailureDecision {
    const now = this.#now();
    const slot = this.#liveFailure(key, now, rule);
    const state = (slot?.state as FailureState | undefined) ?? { log: [], lockedUntil: 0 };
    if (slot === undefined && !this.#admit(now)) return this.#overflow(key, rule.maxAttempts, now);
    const d = failureRecord(state, now, rule, key);
    this.#put(
      key,
      slot,
      'failure',
      state,
      now,
      failureExpiresAt(state, rule),
      state.lockedUntil,
      rule,
    );
    return d;
  }

  recordSuccess(key: string, rule: FailureRule): Decision {
    const now = this.#now();
    const slot = this.#liveFailure(key, now, rule);
    const d = failureSuccess(slot?.state as FailureState | undefined, now, rule, key);
    // A lockout in force stays; otherwise the failure history goes.
    if (slot !== undefined && d.allowed) this.delete(key);
    return d;
  }

  delete(key: string): void {
    if (this.#slots.delete(key)) this.#saturatedUntil = 0;
  }

  size(): number {
    return this.#slots.size;
  }

  close(): void {
    this.#closed = true;
    if (this.#sweepTimer !== undefined) this.#timers.clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.#slots.clear();
    this.#queueKeys = [];
    this.#queueSeqs = [];
    this.#head = 0;
  }

  /** Drops every expired key now (the background sweep calls this). Returns how many went. */
  sweep(): number {
    return this.#sweepExpired(this.#now());
  }

  /** Read-only view of the keys under lockout or block, for status pages. */
  *protectedKeys(): IterableIterator<{ key: string; kind: Kind; untilMs: number }> {
    const now = this.#now();
    for (const [key, slot] of this.#slots) {
      if (slot.protectedUntil > now) this.#clamp(slot, slot.rule, now);
      if (slot.protectedUntil > now)
        yield { key, kind: slot.kind, untilMs: slot.protectedUntil - now };
    }
  }

  /** The clock's time; a step back forgets the saturation instant, which may lie far ahead. */
  #now(): number {
    const now = this.#clock.now();
    if (now < this.#lastNow) this.#saturatedUntil = 0;
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
        const state = slot.state as FixedWindowState;
        if (!fixedWindowClamp(state, now)) return;
        expiresAt = fixedWindowExpiresAt(state, rule as WindowRule);
        protectedUntil = fixedWindowBlockedUntil(state, rule as WindowRule);
        break;
      }
      case 'sliding-window': {
        const state = slot.state as SlidingWindowState;
        if (!slidingWindowClamp(state, now)) return;
        expiresAt = slidingWindowExpiresAt(state, rule as WindowRule);
        protectedUntil = slidingWindowBlockedUntil(state, now, rule as WindowRule);
        break;
      }
      case 'token-bucket': {
        const state = slot.state as TokenBucketState;
        if (!tokenBucketClamp(state, now)) return;
        expiresAt = tokenBucketExpiresAt(state, rule as WindowRule);
        protectedUntil = tokenBucketBlockedUntil(state, rule as WindowRule);
        break;
      }
      default: {
        const state = slot.state as FailureState;
        if (!failureClamp(state, now, rule as FailureRule)) return;
        expiresAt = failureExpiresAt(state, rule as FailureRule);
        protectedUntil = state.lockedUntil;
      }
    }
    slot.expiresAt = expiresAt;
    slot.protectedUntil = protectedUntil > now ? protectedUntil : 0;
    if (expiresAt < this.#expiryHint) this.#expiryHint = expiresAt;
  }

  #live(key: string, kind: Kind, now: number): Slot | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    if (slot.kind !== kind || now >= slot.expiresAt) {
      this.#slots.delete(key);
      this.#saturatedUntil = 0;
      return undefined;
    }
    return slot;
  }

  #liveFailure(key: string, now: number, rule: FailureRule): Slot | undefined {
    const slot = this.#live(key, 'failure', now);
    if (slot === undefined) return undefined;
    this.#clamp(slot, rule, now);
    const logged = (slot.state as FailureState).log.length;
    const state = failureRoll(slot.state as FailureState, now, rule);
    if (state === undefined) {
      this.#slots.delete(key);
      this.#saturatedUntil = 0;
      return undefined;
    }
    // A roll may start a lockout (a lowered maxAttempts): it must be protected like any other.
    if (state.lockedUntil > slot.protectedUntil) {
      slot.protectedUntil = state.lockedUntil;
      slot.expiresAt = state.lockedUntil;
    } else if (state.log.length !== logged) {
      // Expired failures went: the log now expires by this rule, as the Redis script rewrites it.
      slot.expiresAt = failureExpiresAt(state, rule);
      if (slot.expiresAt < this.#expiryHint) this.#expiryHint = slot.expiresAt;
    }
    return slot;
  }

  #store(
    key: string,
    slot: Slot | undefined,
    kind: Kind,
    state: Slot['state'],
    d: Decision,
    now: number,
    expiresAt: number,
    protectedUntil: number,
    rule: WindowRule,
  ): Decision {
    if (slot === undefined) {
      // A refused first call changes nothing, so there is nothing to remember.
      if (!d.allowed) return d;
      if (!this.#admit(now)) return this.#overflow(key, d.limit, now);
    }
    this.#put(key, slot, kind, state, now, expiresAt, protectedUntil, rule);
    return d;
  }

  #put(
    key: string,
    slot: Slot | undefined,
    kind: Kind,
    state: Slot['state'],
    now: number,
    expiresAt: number,
    protectedUntil: number,
    rule: WindowRule | FailureRule,
  ): void {
    if (expiresAt <= now) {
      // The state already equals an absent one (a bucket full again): forget it now, as the Redis
      // script deletes it, so that a clock stepping back cannot bring it back to life.
      if (slot !== undefined) this.delete(key);
      return;
    }
    if (slot === undefined) {
      const seq = ++this.#seq;
      this.#slots.set(key, {
        kind,
        seq,
        state,
        expiresAt,
        protectedUntil: protectedUntil > now ? protectedUntil : 0,
        rule,
      });
      this.#enqueue(key, seq);
      if (this.#sweepTimer === undefined && !this.#closed) this.#armSweep();
    } else {
      slot.state = state;
      slot.expiresAt = expiresAt;
      slot.protectedUntil = protectedUntil > now ? protectedUntil : 0;
      slot.rule = rule;
    }
    if (expiresAt < this.#expiryHint) this.#expiryHint = expiresAt;
  }

  #overflow(key: string, limit: number, now: number): Decision {
    const wait = Math.max(1, this.#saturatedUntil - now);
    return decision(false, 'overflow', limit, 0, wait, wait, key);
  }

  /** Whether a new key could be stored now, evicting nothing. */
  #hasRoom(now: number): boolean {
    if (this.#slots.size < this.#max) return true;
    if (this.#sweepDue(now)) this.#sweepExpired(now);
    if (this.#slots.size < this.#max) return true;
    if (this.#saturatedUntil > now) return false;
    let soonest = Number.POSITIVE_INFINITY;
    for (let i = this.#head; i < this.#queueKeys.length; i++) {
      const slot = this.#slotAt(i);
      if (slot === undefined) continue;
      if (slot.protectedUntil > now) this.#clamp(slot, slot.rule, now);
      if (slot.protectedUntil <= now) return true;
      if (slot.protectedUntil < soonest) soonest = slot.protectedUntil;
    }
    this.#saturatedUntil = soonest;
    return false;
  }

  #enqueue(key: string, seq: number): void {
    this.#queueKeys.push(key);
    this.#queueSeqs.push(seq);
    if (this.#queueKeys.length > 4 * this.#max + 1024) this.#compactQueue();
  }

  /** The live slot a queue entry stands for, or undefined when the entry is stale. */
  #slotAt(i: number): Slot | undefined {
    const slot = this.#slots.get(this.#queueKeys[i] as string);
    return slot !== undefined && slot.seq === this.#queueSeqs[i] ? slot : undefined;
  }

  /** Forgets the queue entries already walked past (cheap: no lookups). */
  #dropConsumed(): void {
    this.#queueKeys = this.#queueKeys.slice(this.#head);
    this.#queueSeqs = this.#queueSeqs.slice(this.#head);
    this.#head = 0;
  }

  /** Rebuilds the queue from live entries only (when stale entries pile up). */
  #compactQueue(): void {
    const keys: string[] = [];
    const seqs: number[] = [];
    for (let i = this.#head; i < this.#queueKeys.length; i++) {
      if (this.#slotAt(i) !== undefined) {
        keys.push(this.#queueKeys[i] as string);
        seqs.push(this.#queueSeqs[i] as number);
      }
    }
    this.#queueKeys = keys;
    this.#queueSeqs = seqs;
    this.#head = 0;
  }

  /** Makes room for one new key, or reports that every key is protected. */
  #admit(now: number): boolean {
    if (this.#slots.size < this.#max) return true;
    if (this.#sweepDue(now)) this.#sweepExpired(now);
    if (this.#slots.size < this.#max) return true;
    if (this.#saturatedUntil > now) return false;
    let soonest = Number.POSITIVE_INFINITY;
    let budget = this.#queueKeys.length - this.#head;
    while (budget-- > 0) {
      const i = this.#head++;
      const key = this.#queueKeys[i] as string;
      const seq = this.#queueSeqs[i] as number;
      const slot = this.#slotAt(i);
      if (this.#head > 1024 && this.#head * 2 > this.#queueKeys.length) this.#dropConsumed();
      if (slot === undefined) continue;
      // A protection stamped in the future (the clock stepped back) is clamped like an access would.
      if (slot.protectedUntil > now) this.#clamp(slot, slot.rule, now);
      if (slot.protectedUntil <= now) {
        this.#slots.delete(key);
        return true;
      }
      // A protected slot goes to the back, so the next eviction does not walk past it again.
      this.#enqueue(key, seq);
      if (slot.protectedUntil < soonest) soonest = slot.protectedUntil;
    }
    this.#saturatedUntil = soonest;
    return false;
  }

  /**
   * A full sweep when the table is full pays only if something has expired. After a sweep the hint
   * is the earliest expiry left, later than now, so this runs at most once per clock millisecond.
   */
  #sweepDue(now: number): boolean {
    return now >= this.#expiryHint;
  }

  #sweepExpired(now: number): number {
    let dropped = 0;
    let hint = Number.POSITIVE_INFINITY;
    for (const [key, slot] of this.#slots) {
      if (now >= slot.expiresAt) {
        this.#slots.delete(key);
        dropped++;
      } else if (slot.expiresAt < hint) {
        hint = slot.expiresAt;
      }
    }
    this.#expiryHint = hint;
    if (dropped > 0) this.#saturatedUntil = 0;
    return dropped;
  }

  #armSweep(): void {
    this.#sweepTimer = this.#timers.setTimeout(() => {
      this.#sweepTimer = undefined;
      if (this.#closed) return;
      this.#sweepExpired(this.#now());
      if (this.#slots.size > 0) this.#armSweep();
    }, this.#sweepMs);
  }
}
