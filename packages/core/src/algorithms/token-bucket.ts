import { type Decision, decision } from '../decision.js';
import type { WindowRule } from '../store.js';

/**
 * Token bucket holding up to `limit` tokens, refilled at `limit` per `windowMs`. Tokens are kept
 * scaled by `windowMs` (`scaled = tokens × W`) so refill is the integer `elapsed × limit`: the
 * memory store and the Redis Lua script agree exactly, with no rounding drift.
 */
export interface TokenBucketState {
  scaled: number;
  last: number;
}

/**
 * A bucket last refilled in the future (the clock stepped back) refills from now on instead: no
 * wait then exceeds the time a full refill takes, and the advertised wait is enough. Mutates
 * `state`; true when it changed it.
 */
export function tokenBucketClamp(state: TokenBucketState, now: number): boolean {
  if (state.last <= now) return false;
  state.last = now;
  return true;
}

/**
 * Refills the bucket up to `now` (an absent bucket is full; a future `last` is clamped; a bucket
 * fuller than this rule's capacity is capped to it).
 */
export function tokenBucketRoll(
  state: TokenBucketState | undefined,
  now: number,
  rule: WindowRule,
): TokenBucketState {
  const full = rule.limit * rule.windowMs;
  if (state === undefined) return { scaled: full, last: now };
  if (!tokenBucketClamp(state, now) && now > state.last) {
    state.scaled = Math.min(full, state.scaled + (now - state.last) * rule.limit);
    state.last = now;
  }
  // A bucket filled under a larger rule (a limiter reconfigured) holds at most a full one now.
  if (state.scaled > full) state.scaled = full;
  return state;
}

function untilFull(state: TokenBucketState, rule: WindowRule): number {
  return Math.ceil((rule.limit * rule.windowMs - state.scaled) / rule.limit);
}

/** Takes `cost` tokens (mutating `state`) or refuses; `state` must already be rolled to `now`. */
export function tokenBucketConsume(
  state: TokenBucketState,
  _now: number,
  rule: WindowRule,
  cost: number,
  key: string,
): Decision {
  const need = cost * rule.windowMs;
  if (state.scaled < need) {
    // A cost above capacity can never pass; advertise one window rather than a time that lies.
    const retry = cost > rule.limit ? rule.windowMs : Math.ceil((need - state.scaled) / rule.limit);
    return decision(
      false,
      'limited',
      rule.limit,
      Math.floor(state.scaled / rule.windowMs),
      retry,
      untilFull(state, rule),
      key,
    );
  }
  state.scaled -= need;
  return decision(
    true,
    'allowed',
    rule.limit,
    Math.floor(state.scaled / rule.windowMs),
    0,
    untilFull(state, rule),
    key,
  );
}

/**
 * What a call of cost 1 would get, without taking anything. A store clamps `state` first
 * ({@link tokenBucketClamp}) and keeps the clamped `last`.
 */
export function tokenBucketPeek(
  state: TokenBucketState | undefined,
  now: number,
  rule: WindowRule,
  key: string,
): Decision {
  const rolled = tokenBucketRoll(state === undefined ? undefined : { ...state }, now, rule);
  const remaining = Math.floor(rolled.scaled / rule.windowMs);
  if (remaining < 1) {
    const retry = Math.ceil((rule.windowMs - rolled.scaled) / rule.limit);
    return decision(false, 'limited', rule.limit, 0, retry, untilFull(rolled, rule), key);
  }
  return decision(true, 'allowed', rule.limit, remaining, 0, untilFull(rolled, rule), key);
}

/** Once full again the bucket equals an absent one. */
export function tokenBucketExpiresAt(state: TokenBucketState, rule: WindowRule): number {
  return state.last + untilFull(state, rule);
}

/** Until when a unit call would be refused (0 when one passes now). */
export function tokenBucketBlockedUntil(state: TokenBucketState, rule: WindowRule): number {
  return state.scaled < rule.windowMs
    ? state.last + Math.ceil((rule.windowMs - state.scaled) / rule.limit)
    : 0;
}

/**
 * Puts back into a bucket rolled to now what a spend of `cost` tokens `agoMs` ago still takes from
 * it, never above a full bucket. `touched`: whether the bucket changed since the spend (its last
 * refill, before this roll, was later than the spend). When it did not, the bucket has only
 * refilled since, and whatever the spend still takes is below full: all of it comes back (up to
 * full). When it did, another spend may have used room that the refill had already given back for
 * this one, so only what the refill has not replaced yet comes back: `cost` less the tokens refilled
 * in `agoMs` (a unit the refill replaced is never credited twice).
 */
export function tokenBucketRefund(
  state: TokenBucketState,
  rule: WindowRule,
  cost: number,
  agoMs: number,
  touched: boolean,
): void {
  const give = touched
    ? Math.max(0, cost * rule.windowMs - agoMs * rule.limit)
    : cost * rule.windowMs;
  state.scaled = Math.min(rule.limit * rule.windowMs, state.scaled + give);
}
