import {
  failureBan,
  failureCheck,
  failureExpiresAt,
  failureRecord,
  failureRecordDistinct,
  failureRoll,
  failureSuccess,
} from './algorithms/failure-log.js';
import type { Decision } from './decision.js';
import type { KeyIndex } from './key-index.js';
import type { Slot, SlotPool } from './slot-pool.js';
import { clampSlot, hasPrefix, overflowDecision, putState } from './slot-state.js';
import { byEnd, type FailureDecision, type FailureRule, type StoreLockout } from './store.js';

/**
 * The memory store's failure state (docs/design.md#failure-limiter): the failure calls of the store
 * and of each of its failure tables, over one slot pool. Every call takes the store's time.
 * @internal
 */
export class FailureSlots {
  readonly #pool: SlotPool;

  /** @param pool the store's slots */
  constructor(pool: SlotPool) {
    this.#pool = pool;
  }

  check(table: KeyIndex<Slot>, key: string, rule: FailureRule, now: number): Decision {
    const slot = this.live(table, key, now, rule);
    if (slot === undefined && !this.#pool.hasRoom(now))
      return overflowDecision(this.#pool, key, rule.maxAttempts, now);
    return failureCheck(slot, now, rule, key);
  }

  /**
   * A failure for `key`; with `member`, one where only distinct members count (see
   * `Store.recordDistinct`).
   */
  record(
    table: KeyIndex<Slot>,
    prefix: string,
    key: string,
    rule: FailureRule,
    now: number,
    member?: string,
  ): FailureDecision {
    const slot = this.#held(table, prefix, key, rule, now);
    if (slot === undefined) return overflowDecision(this.#pool, key, rule.maxAttempts, now);
    const d =
      member === undefined
        ? failureRecord(slot, now, rule, key)
        : failureRecordDistinct(slot, now, rule, key, member);
    this.#put(slot, rule, now);
    return d;
  }

  success(table: KeyIndex<Slot>, key: string, rule: FailureRule, now: number): Decision {
    const slot = this.live(table, key, now, rule);
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
  ban(
    table: KeyIndex<Slot>,
    prefix: string,
    key: string,
    rule: FailureRule,
    ms: number,
    now: number,
  ): FailureDecision {
    const slot = this.#held(table, prefix, key, rule, now);
    if (slot === undefined) return overflowDecision(this.#pool, key, rule.maxAttempts, now);
    const d = failureBan(slot, now, rule, ms, key);
    this.#put(slot, rule, now);
    return d;
  }

  /**
   * The lockouts in force whose key (as `protectedKeys` shows it) starts with `prefix`, soonest
   * end first, at most `limit` (see `Store.lockouts`): each read under `rule` as a check would
   * read it (clamped, and forgotten when over). O(keys held).
   */
  lockouts(prefix: string, limit: number, rule: FailureRule, now: number): StoreLockout[] {
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
      const live = this.live(slot.table, slot.key, now, rule);
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

  /**
   * `key`'s failure state in `table`, clamped and rolled to `now` under `rule`; undefined when it
   * holds none. State of another kind, or that has ended, is forgotten: a failure call erases it.
   */
  live(table: KeyIndex<Slot>, key: string, now: number, rule: FailureRule): Slot | undefined {
    const slot = table.get(key);
    if (slot === undefined) return undefined;
    if (slot.kind !== 'failure' || now >= slot.expiresAt) {
      this.#pool.drop(slot);
      return undefined;
    }
    clampSlot(this.#pool, slot, rule, now);
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

  /** `key`'s live failure slot, or a new one; undefined when the store is full of protected keys. */
  #held(
    table: KeyIndex<Slot>,
    prefix: string,
    key: string,
    rule: FailureRule,
    now: number,
  ): Slot | undefined {
    const slot = this.live(table, key, now, rule);
    if (slot !== undefined) return slot;
    if (!this.#pool.admit(now)) return undefined;
    return this.#pool.claim(table, prefix, key, 'failure', rule);
  }

  /** Records a counted slot: it expires, and is protected while locked, as its state says. */
  #put(slot: Slot, rule: FailureRule, now: number): void {
    putState(this.#pool, slot, slot, now, failureExpiresAt(slot, rule), slot.lockedUntil, rule);
  }
}
