import { decision } from '../decision.js';
import type { Decision } from '../decision.js';
import type { FailureDecision, FailureRule } from '../store.js';

/**
 * Sliding log of failure times plus a lockout. A failure exactly `windowMs` old has expired. The
 * failure that brings the count to `maxAttempts` starts the lockout and clears the log; failures
 * during a lockout neither count nor extend it; when the lockout ends the history is gone. State
 * stamped in the future (the clock stepped back) is clamped when read: see {@link failureClamp}.
 */
export interface FailureState {
  /** Failure times, oldest first, all within the window. */
  log: number[];
  /** Lockout end (exclusive); 0 when not locked. */
  lockedUntil: number;
  /** The length of the ban in force (set by hand, see {@link failureBan}); 0 for an earned lockout. */
  banMs: number;
  /**
   * Escalation (a rule with `escalate`): the step of the current or last earned lockout (its length
   * is `lockoutMs · factor^step`, see {@link lockoutLength}). Meaningful while locked or `lastEnd > 0`.
   */
  step: number;
  /** Escalation: when the last earned lockout ended (0: none remembered). */
  lastEnd: number;
  /**
   * A distinct log (see {@link failureRecordDistinct}): the member of each failure in `log`, side by
   * side; undefined for an ordinary log.
   */
  members: string[] | undefined;
}

/** A fresh, absent-equivalent failure state. */
export function freshFailure(): FailureState {
  return { log: [], lockedUntil: 0, banMs: 0, step: 0, lastEnd: 0, members: undefined };
}

/** The length of an earned lockout at escalation `step` under `rule` (never below `lockoutMs`). */
export function lockoutLength(rule: FailureRule, step: number): number {
  const e = rule.escalate;
  if (e === undefined || step === 0) return rule.lockoutMs;
  const grown = rule.lockoutMs * e.factor ** step;
  return Math.max(rule.lockoutMs, Math.min(grown, e.maxLockoutMs));
}

/**
 * Clamps state stamped in the future, which a clock that stepped back leaves behind: a lockout
 * ends at most `lockoutMs` from now, and a failure logged after now counts as logged now (so it
 * counts for at most `windowMs` from now). Mutates `state`; returns true when it changed anything.
 * A store that keeps the state must keep the clamped values (the Redis script writes them back), so
 * that waiting the advertised `retryAfterMs` is always enough.
 */
export function failureClamp(state: FailureState, now: number, rule: FailureRule): boolean {
  let changed = false;
  // A ban is bounded by its own length, an earned lockout by the rule's (at its escalation step).
  const bound = state.banMs > 0 ? state.banMs : lockoutLength(rule, state.step);
  if (state.lockedUntil !== 0 && state.lockedUntil > now + bound) {
    state.lockedUntil = now + bound;
    changed = true;
  }
  // The log is in time order: only its tail can lie in the future.
  const log = state.log;
  for (let i = log.length - 1; i >= 0 && (log[i] as number) > now; i--) {
    log[i] = now;
    changed = true;
  }
  if (state.lastEnd > now) {
    state.lastEnd = now;
    changed = true;
  }
  return changed;
}

/** Whether an ended lockout of `state` is still remembered for escalation at `now`. */
function remembered(state: FailureState, now: number, rule: FailureRule): boolean {
  const e = rule.escalate;
  return e !== undefined && state.lastEnd > 0 && now < state.lastEnd + e.maxLockoutMs;
}

/** Empties the log (and its members). */
function clearLog(state: FailureState): void {
  state.log.length = 0;
  if (state.members !== undefined) state.members.length = 0;
}

/** Starts an earned lockout at `now`, at the escalation step the key's history gives. */
function startLockout(state: FailureState, now: number, rule: FailureRule): void {
  clearLog(state);
  state.step = remembered(state, now, rule) ? state.step + 1 : 0;
  state.lockedUntil = now + lockoutLength(rule, state.step);
  state.banMs = 0;
}

/**
 * Clamps (see {@link failureClamp}), then drops expired failures and an ended lockout. Returns
 * undefined when nothing is left.
 */
export function failureRoll(
  state: FailureState | undefined,
  now: number,
  rule: FailureRule,
): FailureState | undefined {
  if (state === undefined) return undefined;
  failureClamp(state, now, rule);
  if (state.lockedUntil !== 0) {
    if (now < state.lockedUntil) return state;
    // Over. An earned lockout's end is remembered for escalation (a ban's is not: the step and
    // end of the last earned one stay as they were).
    if (state.banMs === 0) state.lastEnd = state.lockedUntil;
    state.lockedUntil = 0;
    state.banMs = 0;
    clearLog(state);
    return remembered(state, now, rule) ? state : undefined;
  }
  const log = state.log;
  let drop = 0;
  while (drop < log.length && (log[drop] as number) + rule.windowMs <= now) drop++;
  if (drop > 0) {
    log.splice(0, drop);
    if (state.members !== undefined) state.members.splice(0, drop);
  }
  if (log.length === 0) return remembered(state, now, rule) ? state : undefined;
  // Only after `maxAttempts` was lowered (reconfigure) can a live log hold that many failures: the
  // subject is over the new limit and is locked from this call on, with the lockout in force now.
  if (log.length >= rule.maxAttempts) startLockout(state, now, rule);
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
  if (state === undefined || state.log.length === 0)
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
 * Counts one failure into a rolled `state` (mutating it; pass {@link freshFailure} when absent)
 * and answers the decision after counting.
 */
export function failureRecord(
  state: FailureState,
  now: number,
  rule: FailureRule,
  key: string,
): FailureDecision {
  if (state.lockedUntil !== 0) return locked(state, now, rule, key);
  state.log.push(now);
  if (state.members !== undefined) state.members.push('');
  return counted(state, now, rule, key);
}

function counted(
  state: FailureState,
  now: number,
  rule: FailureRule,
  key: string,
): FailureDecision {
  if (state.log.length >= rule.maxAttempts) {
    startLockout(state, now, rule);
    return { ...locked(state, now, rule, key), lockoutStarted: true };
  }
  return open(state, now, rule, key);
}

/**
 * Counts a failure against `member` into a rolled distinct log (see `Store.recordDistinct`): the
 * member's earlier failure in the window, if any, is replaced by this one (the log stays in time
 * order), so the count is the number of distinct members within the window.
 */
export function failureRecordDistinct(
  state: FailureState,
  now: number,
  rule: FailureRule,
  key: string,
  member: string,
): FailureDecision {
  if (state.lockedUntil !== 0) return locked(state, now, rule, key);
  if (state.members === undefined) state.members = state.log.map(() => '');
  const members = state.members;
  const log = state.log;
  const at = members.indexOf(member);
  if (at >= 0) {
    // The later failures move up one and this one takes the last place: what splice and push
    // would leave, without the array splice allocates, or the regrowth a push after it may pay.
    const last = log.length - 1;
    for (let i = at; i < last; i++) {
      log[i] = log[i + 1] as number;
      members[i] = members[i + 1] as string;
    }
    log[last] = now;
    members[last] = member;
  } else {
    log.push(now);
    members.push(member);
  }
  return counted(state, now, rule, key);
}

/**
 * A correct credential on a rolled `state`: an active lockout is kept and answered like any attempt
 * during it (a success never lifts a lockout); otherwise the answer is a clean slate, and the store
 * forgets the failure history.
 */
export function failureSuccess(
  state: FailureState | undefined,
  now: number,
  rule: FailureRule,
  key: string,
): Decision {
  // Unlocked, the history goes: the answer is a check's of a key that holds nothing.
  return failureCheck(state?.lockedUntil === 0 ? undefined : state, now, rule, key);
}

/** When a rolled state becomes worthless. */
export function failureExpiresAt(state: FailureState, rule: FailureRule): number {
  const e = rule.escalate;
  if (state.lockedUntil !== 0) {
    // An earned lockout's end is remembered for escalation after it; a ban keeps what was.
    if (e === undefined) return state.lockedUntil;
    const after = state.banMs === 0 ? state.lockedUntil : state.lastEnd;
    return Math.max(state.lockedUntil, after > 0 ? after + e.maxLockoutMs : 0);
  }
  const logged =
    state.log.length > 0 ? (state.log[state.log.length - 1] as number) + rule.windowMs : 0;
  const step = e !== undefined && state.lastEnd > 0 ? state.lastEnd + e.maxLockoutMs : 0;
  return Math.max(logged, step);
}

/**
 * Forgets the failures that have expired under a window of `windowMs` (the rule that was in force
 * before a limiter was reconfigured), so that a wider window counts none of them again. Mutates
 * `state`; a lockout is left as it is.
 */
export function failurePrune(state: FailureState, now: number, windowMs: number): void {
  if (state.lockedUntil !== 0) return;
  const log = state.log;
  let drop = 0;
  while (drop < log.length && (log[drop] as number) + windowMs <= now) drop++;
  if (drop > 0) {
    log.splice(0, drop);
    if (state.members !== undefined) state.members.splice(0, drop);
  }
}

/**
 * A lockout set by hand for `ms` from now (mutating `state`, rolled to now; a fresh one when
 * absent): failures during it neither count nor extend it, a success keeps it, and a reset lifts
 * it, as an earned lockout. It never shortens a lockout in force that ends later (which keeps its
 * own kind). Returns the locked decision.
 */
export function failureBan(
  state: FailureState,
  now: number,
  rule: FailureRule,
  ms: number,
  key: string,
): Decision {
  if (state.lockedUntil === 0 || now + ms > state.lockedUntil) {
    // A ban over an earned lockout ends that one now: its end is what escalation remembers.
    if (state.lockedUntil !== 0 && state.banMs === 0) state.lastEnd = now;
    clearLog(state);
    state.lockedUntil = now + ms;
    state.banMs = ms;
  }
  return locked(state, now, rule, key);
}
