import { type Decision, decision } from '../decision.js';
import type { WindowRule } from '../store.js';
import { clampStart } from './clamp.js';

/**
 * Fixed window anchored at the first call: `count` units spent since `start`. The window ends at
 * `start + windowMs` exactly (a call at that instant opens a new window). Refused calls are free.
 */
export interface FixedWindowState {
  start: number;
  count: number;
}

/** Rolls an absent or ended window to a fresh one starting at `now` (clamping a future start). */
export function fixedWindowRoll(
  state: FixedWindowState | undefined,
  now: number,
  rule: WindowRule,
): FixedWindowState {
  if (state === undefined || now >= state.start + rule.windowMs) return { start: now, count: 0 };
  clampStart(state, now);
  return state;
}

/** Spends `cost` (mutating `state`) or refuses; `state` must already be rolled to `now`. */
export function fixedWindowConsume(
  state: FixedWindowState,
  now: number,
  rule: WindowRule,
  cost: number,
  key: string,
): Decision {
  const reset = state.start + rule.windowMs - now;
  if (state.count + cost > rule.limit) {
    return decision(
      false,
      'limited',
      rule.limit,
      Math.max(0, rule.limit - state.count),
      reset,
      reset,
      key,
    );
  }
  state.count += cost;
  return decision(true, 'allowed', rule.limit, rule.limit - state.count, 0, reset, key);
}

/**
 * What a call of cost 1 would get, without spending; an absent window reports `resetMs` 0. A store
 * clamps `state` first ({@link clampStart}) and keeps the clamped start.
 */
export function fixedWindowPeek(
  state: FixedWindowState | undefined,
  now: number,
  rule: WindowRule,
  key: string,
): Decision {
  if (state === undefined || now >= state.start + rule.windowMs) {
    return decision(true, 'allowed', rule.limit, rule.limit, 0, 0, key);
  }
  const reset = state.start + rule.windowMs - now;
  const remaining = Math.max(0, rule.limit - state.count);
  return remaining > 0
    ? decision(true, 'allowed', rule.limit, remaining, 0, reset, key)
    : decision(false, 'limited', rule.limit, 0, reset, reset, key);
}

/** When the state is worthless (equal to an absent one). */
export function fixedWindowExpiresAt(state: FixedWindowState, rule: WindowRule): number {
  return state.start + rule.windowMs;
}

/** Until when the window refuses a unit call (0 when it accepts one now). */
export function fixedWindowBlockedUntil(state: FixedWindowState, rule: WindowRule): number {
  return state.count >= rule.limit ? state.start + rule.windowMs : 0;
}

/**
 * Gives back `cost` units spent `agoMs` ago, when they were spent in the window still in force
 * (it started at or before then); a window that rolled since keeps its count. Never below zero.
 */
export function fixedWindowRefund(
  state: FixedWindowState | undefined,
  now: number,
  rule: WindowRule,
  cost: number,
  agoMs: number,
): void {
  if (state === undefined || now >= state.start + rule.windowMs) return;
  if (now - state.start < agoMs) return;
  state.count = Math.max(0, state.count - cost);
}
