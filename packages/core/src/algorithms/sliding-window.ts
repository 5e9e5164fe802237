import { type Decision, decision } from '../decision.js';
import type { WindowRule } from '../store.js';
import { clampStart } from './clamp.js';

/**
 * Weighted two-window counter: the previous window's count weighs in proportion to how much of it
 * still overlaps the sliding window. Windows are anchored at the first call and advance in whole
 * `windowMs` steps (after two idle windows the key re-anchors like a new one). All arithmetic is scaled by `windowMs` so it stays in integers: the memory
 * store and the Redis Lua script then agree to the unit.
 *
 * weighted = prev × (W − elapsed) + curr × W;  a call of cost c passes when weighted + c×W ≤ limit×W.
 */
export interface SlidingWindowState {
  start: number;
  prev: number;
  curr: number;
}

/** Advances the state to the window containing `now` (clamping a future start first). */
export function slidingWindowRoll(
  state: SlidingWindowState | undefined,
  now: number,
  rule: WindowRule,
): SlidingWindowState {
  if (state === undefined) return { start: now, prev: 0, curr: 0 };
  clampStart(state, now);
  const steps = Math.floor((now - state.start) / rule.windowMs);
  if (steps === 1) {
    state.prev = state.curr;
    state.curr = 0;
    state.start += rule.windowMs;
  } else if (steps >= 2) {
    // Both windows are stale: the state is worth no more than an absent one, so it re-anchors
    // exactly as a fresh key would (a store that already dropped it must agree).
    state.prev = 0;
    state.curr = 0;
    state.start = now;
  }
  return state;
}

function weighted(state: SlidingWindowState, now: number, w: number): number {
  return state.prev * (w - (now - state.start)) + state.curr * w;
}

function resetMs(state: SlidingWindowState, now: number, w: number): number {
  const elapsed = now - state.start;
  if (state.curr > 0) return 2 * w - elapsed;
  return state.prev > 0 ? w - elapsed : 0;
}

function retryMs(state: SlidingWindowState, now: number, rule: WindowRule, cost: number): number {
  const w = rule.windowMs;
  const elapsed = now - state.start;
  const room = rule.limit - state.curr - cost;
  if (room >= 0 && state.prev > 0) {
    // Within this window: prev × (W − e) ≤ room × W  ⇔  e ≥ W − ⌊room × W / prev⌋.
    return w - Math.floor((room * w) / state.prev) - elapsed;
  }
  const nextRoom = rule.limit - cost;
  // A cost above the limit can never pass; advertise one window rather than a time that lies.
  if (nextRoom < 0) return w;
  // Next window, where curr becomes prev: curr × (W − e) ≤ nextRoom × W.
  const into = state.curr > 0 ? Math.max(0, w - Math.floor((nextRoom * w) / state.curr)) : 0;
  return w - elapsed + into;
}

/** Spends `cost` (mutating `state`) or refuses; `state` must already be rolled to `now`. */
export function slidingWindowConsume(
  state: SlidingWindowState,
  now: number,
  rule: WindowRule,
  cost: number,
  key: string,
): Decision {
  const w = rule.windowMs;
  const total = rule.limit * w;
  const used = weighted(state, now, w);
  if (used + cost * w > total) {
    const retry = retryMs(state, now, rule, cost);
    return decision(
      false,
      'limited',
      rule.limit,
      Math.max(0, Math.floor((total - used) / w)),
      retry,
      resetMs(state, now, w),
      key,
    );
  }
  state.curr += cost;
  return decision(
    true,
    'allowed',
    rule.limit,
    Math.floor((total - used - cost * w) / w),
    0,
    resetMs(state, now, w),
    key,
  );
}

/**
 * What a call of cost 1 would get, without changing the state. A store clamps `state` first
 * ({@link clampStart}) and keeps the clamped start.
 */
export function slidingWindowPeek(
  state: SlidingWindowState | undefined,
  now: number,
  rule: WindowRule,
  key: string,
): Decision {
  if (state === undefined) return decision(true, 'allowed', rule.limit, rule.limit, 0, 0, key);
  const rolled = slidingWindowRoll({ ...state }, now, rule);
  const w = rule.windowMs;
  const used = weighted(rolled, now, w);
  const remaining = Math.max(0, Math.floor((rule.limit * w - used) / w));
  if (used + w > rule.limit * w) {
    const retry = retryMs(rolled, now, rule, 1);
    return decision(false, 'limited', rule.limit, remaining, retry, resetMs(rolled, now, w), key);
  }
  return decision(true, 'allowed', rule.limit, remaining, 0, resetMs(rolled, now, w), key);
}

/** After two whole windows the state equals an absent one. */
export function slidingWindowExpiresAt(state: SlidingWindowState, rule: WindowRule): number {
  return state.start + 2 * rule.windowMs;
}

/** Until when a unit call would be refused (0 when one passes now). */
export function slidingWindowBlockedUntil(
  state: SlidingWindowState,
  now: number,
  rule: WindowRule,
): number {
  const w = rule.windowMs;
  return weighted(state, now, w) + w > rule.limit * w ? now + retryMs(state, now, rule, 1) : 0;
}

/**
 * Gives back `cost` units spent `agoMs` ago to the window they were counted in: the current one, or
 * the previous one (its weight still counts); older spends have no weight left. Never below zero.
 * `state` must be rolled to `now`.
 */
export function slidingWindowRefund(
  state: SlidingWindowState,
  now: number,
  rule: WindowRule,
  cost: number,
  agoMs: number,
): void {
  const elapsed = now - state.start;
  if (elapsed >= agoMs) state.curr = Math.max(0, state.curr - cost);
  else if (elapsed + rule.windowMs >= agoMs) state.prev = Math.max(0, state.prev - cost);
}
