// What a memory store slot's state means for the pool: when it expires and until when it is
// protected, by kind, after a clock that stepped back or under a reconfigured rule; and how a new
// state is recorded into its slot. The algorithms (algorithms/*.ts) read and write the state; the
// pool (slot-pool.ts) admits and evicts by these two instants.
import { clampStart } from './algorithms/clamp.js';
import { failureClamp, failureExpiresAt, failurePrune } from './algorithms/failure-log.js';
import {
  fixedWindowBlockedUntil,
  fixedWindowExpiresAt,
  type FixedWindowState,
} from './algorithms/fixed-window.js';
import {
  slidingWindowBlockedUntil,
  slidingWindowExpiresAt,
  slidingWindowRoll,
  type SlidingWindowState,
} from './algorithms/sliding-window.js';
import {
  tokenBucketBlockedUntil,
  tokenBucketClamp,
  tokenBucketExpiresAt,
  type TokenBucketState,
} from './algorithms/token-bucket.js';
import { type Decision, decision } from './decision.js';
import type { Kind, Slot, SlotPool, State } from './slot-pool.js';
import type { FailureRule, WindowRule } from './store.js';

/**
 * Clamps a live slot's state stamped in the future (the clock stepped back) and, when that
 * changed anything, its expiry and protection. The slot's kind must match `rule`.
 * @internal
 */
export function clampSlot(
  pool: SlotPool,
  slot: Slot,
  rule: WindowRule | FailureRule,
  now: number,
): void {
  let expiresAt: number;
  let protectedUntil: number;
  switch (slot.kind) {
    case 'fixed-window': {
      if (!clampStart(slot, now)) return;
      expiresAt = fixedWindowExpiresAt(slot, rule as WindowRule);
      protectedUntil = fixedWindowBlockedUntil(slot, rule as WindowRule);
      break;
    }
    case 'sliding-window': {
      if (!clampStart(slot, now)) return;
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
  pool.expiresAt(expiresAt);
}

/**
 * Re-stamps a slot's expiry and protection under `after`, a limiter having been reconfigured from
 * `before` (see `MemoryStore.restamp`): what has ended goes, failures expired under `before` are
 * forgotten; counts, starts and lockouts are kept.
 * @internal
 */
export function restampSlot(
  pool: SlotPool,
  slot: Slot,
  now: number,
  before: WindowRule | FailureRule,
  after: WindowRule | FailureRule,
): void {
  if (now >= slot.expiresAt) {
    pool.drop(slot);
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
        pool.drop(slot);
        return;
      }
      expiresAt = failureExpiresAt(slot, after as FailureRule);
    }
  }
  putState(pool, slot, slot, now, expiresAt, protectedUntil, after);
}

/** Records a live slot's new state, or forgets the slot when the state equals an absent one.
 * @internal
 */
export function putState(
  pool: SlotPool,
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
    pool.drop(slot);
    return;
  }
  // A roll that started a new fixed window made a new state object: its fields move in.
  if (state !== slot) copyState(slot.kind, state, slot);
  slot.expiresAt = expiresAt;
  slot.protectedUntil = protectedUntil > now ? protectedUntil : 0;
  slot.rule = rule;
  pool.expiresAt(expiresAt);
}

/** The answer for a new key when every key held is protected: refused for as long as that lasts.
 * @internal
 */
export function overflowDecision(
  pool: SlotPool,
  key: string,
  limit: number,
  now: number,
): Decision {
  const wait = pool.saturatedFor(now);
  return decision(false, 'overflow', limit, 0, wait, wait, key);
}

/** A fresh fixed window at `now`, written into `into` (what `fixedWindowRoll` makes of no state). */
export function freshFixed(into: FixedWindowState, now: number): FixedWindowState {
  into.start = now;
  into.count = 0;
  return into;
}

/** A fresh sliding window at `now` (what `slidingWindowRoll` makes of no state). */
export function freshSliding(into: SlidingWindowState, now: number): SlidingWindowState {
  into.start = now;
  into.prev = 0;
  into.curr = 0;
  return into;
}

/** A full bucket at `now` (what `tokenBucketRoll` makes of no state). */
export function freshBucket(
  into: TokenBucketState,
  now: number,
  rule: WindowRule,
): TokenBucketState {
  into.scaled = rule.limit * rule.windowMs;
  into.last = now;
  return into;
}

/** Whether the key a slot shows outside its table (`<scope>:<key>` in a failure table) starts with `prefix`. */
export function hasPrefix(slot: Slot, prefix: string): boolean {
  if (prefix === '') return true;
  if (slot.prefix === '') return slot.key.startsWith(prefix);
  return (slot.prefix + slot.key).startsWith(prefix);
}

/** Copies a window state field by field (from a scratch state into a slot's own object). */
export function copyState(kind: Kind, from: State, to: State): void {
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
