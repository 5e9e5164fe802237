import { decision } from '../decision.js';
import type { Decision } from '../decision.js';
import type { FailureDecision, FailureRule } from '../store.js';

/**
 * Sliding log of failure times plus a lockout. A failure exactly `windowMs` old has expired. The
 * failure that brings the count to `maxAttempts` starts the lockout and clears the log; failures
 * during a lockout neither count nor extend it; when the lockout ends the history is gone.
 */
export interface FailureState {
  /** Failure times, oldest first, all within the window. */
  log: number[];
  /** Lockout end (exclusive); 0 when not locked. */
  lockedUntil: number;
}

/** Drops expired failures and an ended lockout. Returns undefined when nothing is left. */
export function failureRoll(
  state: FailureState | undefined,
  now: number,
  rule: FailureRule,
): FailureState | undefined {
  if (state === undefined) return undefined;
  if (state.lockedUntil !== 0) return now < state.lockedUntil ? state : undefined;
  const log = state.log;
  let drop = 0;
  while (drop < log.length && (log[drop] as number) + rule.windowMs <= now) drop++;
  if (drop === log.length) return undefined;
  if (drop > 0) log.splice(0, drop);
  return state;
}

function locked(state: FailureState, now: number, rule: FailureRule, key: string): Decision {
  const left = state.lockedUntil - now;
  return decision(false, 'locked', rule.maxAttempts, 0, left, left, key);
}

function open(
  state: FailureState | undefined,
  now: number,
  rule: FailureRule,
  key: string,
): Decision {
  if (state === undefined)
    return decision(true, 'allowed', rule.maxAttempts, rule.maxAttempts, 0, 0, key);
  const newest = state.log[state.log.length - 1] as number;
  return decision(
    true,
    'allowed',
    rule.maxAttempts,
    rule.maxAttempts - state.log.length,
    0,
    newest + rule.windowMs - now,
    key,
  );
}

/** The state of a rolled `state`, counting nothing. */
export function failureCheck(
  state: FailureState | undefined,
  now: number,
  rule: FailureRule,
  key: string,
): Decision {
  return state !== undefined && state.lockedUntil !== 0
    ? locked(state, now, rule, key)
    : open(state, now, rule, key);
}

/**
 * Counts one failure into a rolled `state` (mutating it; pass a fresh `{ log: [], lockedUntil: 0 }`
 * when absent) and answers the decision after counting.
 */
export function failureRecord(
  state: FailureState,
  now: number,
  rule: FailureRule,
  key: string,
): FailureDecision {
  if (state.lockedUntil !== 0) return locked(state, now, rule, key);
  state.log.push(now);
  if (state.log.length >= rule.maxAttempts) {
    state.log.length = 0;
    state.lockedUntil = now + rule.lockoutMs;
    return { ...locked(state, now, rule, key), lockoutStarted: true };
  }
  return open(state, now, rule, key);
}

/** When a rolled state becomes worthless. */
export function failureExpiresAt(state: FailureState, rule: FailureRule): number {
  return state.lockedUntil !== 0
    ? state.lockedUntil
    : (state.log[state.log.length - 1] as number) + rule.windowMs;
}
