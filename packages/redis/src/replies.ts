// What Redis answers RedisStore: every reply is checked field by field before it becomes a
// decision, and one that is not what the script can answer is a store error like any other.
import type { FailureRule, WindowRule } from '@portcullis/core';

/** The error a decision gets when Redis did not answer within `timeoutMs`. */
export class RedisTimeoutError extends Error {
  readonly code = 'ERR_PORTCULLIS_REDIS_TIMEOUT';
  constructor(ms: number) {
    super(`Redis did not answer within ${ms}ms`);
    this.name = 'RedisTimeoutError';
  }
}

/** Thrown (then handled as a store error) when a reply is malformed. */
export class RedisReplyError extends Error {
  readonly code = 'ERR_PORTCULLIS_REDIS_REPLY';
  constructor(reply: unknown) {
    super(`malformed reply from Redis: ${describeReply(reply)}`);
    this.name = 'RedisReplyError';
  }
}

function describeReply(reply: unknown): string {
  try {
    return (JSON.stringify(reply) ?? String(reply)).slice(0, 100);
  } catch {
    return String(reply).slice(0, 100);
  }
}

/**
 * The script's reply: allowed (0|1), remaining, retryAfterMs, resetMs, lockoutStarted (0|1), and
 * for an allowed consume the script's time of the spend.
 */
export type ScriptReply = [number, number, number, number, number, number?];

export function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

export function isFiveIntegers(reply: unknown): reply is ScriptReply {
  return Array.isArray(reply) && reply.length === 5 && reply.every(isInteger);
}

export function isSpentReply(reply: unknown): reply is ScriptReply {
  // Any integer time: a test clock may stand before the epoch after it stepped back.
  return Array.isArray(reply) && reply.length === 6 && reply.every(isInteger);
}

/** The longest failure state a window call can meet: a lockout of the longest timer delay. */
export const MAX_HELD_MS = 2 ** 31 - 1;

/** The longest wait a window algorithm can honestly advertise: the time its state takes to drain. */
export function windowSpan(rule: WindowRule): number {
  return rule.algorithm === 'sliding-window' ? 2 * rule.windowMs : rule.windowMs;
}

/**
 * Whether `reply` is a well-formed answer to a window operation: integers; allowed and
 * lockoutStarted 0 or 1 (never a lockout); remaining within [0, limit]; an allowed answer waits 0,
 * a refused one more than 0; no wait beyond the algorithm's span; a peek is allowed exactly when a
 * unit remains; a fixed window's refusal waits exactly until it resets.
 */
export function windowReplyValid(
  reply: unknown,
  rule: WindowRule,
  peek: boolean,
): reply is ScriptReply {
  // A consume that spent names, sixth, the script's time of the spend (see SpentReply). It is the
  // hot path (every allowed decision), so it is checked inline: allowed, no wait, no failure
  // state, what remains and the reset within the rule, as the five-field checks below would.
  if (!peek && Array.isArray(reply) && reply.length === 6 && reply[0] === 1) {
    const remaining: unknown = reply[1];
    const reset: unknown = reply[3];
    return (
      reply[2] === 0 &&
      reply[4] === 0 &&
      isInteger(reply[5]) &&
      isInteger(remaining) &&
      remaining <= rule.limit &&
      remaining >= 0 &&
      isInteger(reset) &&
      reset >= 0 &&
      reset <= windowSpan(rule)
    );
  }
  // Six fields from a consume that did not spend: never.
  if (!peek && isSpentReply(reply)) return false;
  // A sixth field (1) marks a lockout in force that this call ended sooner than it was stored.
  if (!isFiveIntegers(reply) && !(isSpentReply(reply) && reply[0] === 0 && reply[5] === 1))
    return false;
  const [allowed, remaining, retry, reset, started] = reply;
  // A key that holds failure state (a failure limiter of the same name) refuses a window call
  // until that state ends, which may be longer than the window; the fifth field says so (2).
  if (started === 2)
    return (
      allowed === 0 && remaining === 0 && retry === reset && retry >= 1 && retry <= MAX_HELD_MS
    );
  const span = windowSpan(rule);
  if (started !== 0 || remaining < 0 || remaining > rule.limit || reset < 0 || reset > span)
    return false;
  if (allowed === 1) return retry === 0 && (!peek || remaining >= 1);
  if (allowed !== 0 || retry < 1 || retry > span || (peek && remaining !== 0)) return false;
  return rule.algorithm !== 'fixed-window' || retry === reset;
}

/**
 * A failure operation of the script: check, record a failure, record a distinct failure, record a
 * success, write back, ban, a failure during a lockout seen, a listing's read (answers as a check).
 */
export type FailureOp = 'k' | 'r' | 'd' | 's' | 'w' | 'b' | 'v' | 'n';

/** The longest earned lockout of `rule`: `lockoutMs`, or an escalated one up to `maxLockoutMs`. */
export function longestLockout(rule: FailureRule): number {
  const e = rule.escalate;
  return e === undefined ? rule.lockoutMs : Math.max(rule.lockoutMs, e.maxLockoutMs);
}

/**
 * Whether `reply` is a well-formed answer to a failure operation (`v` answers as a check):
 * integers; a lockout refuses with
 * remaining 0 and retryAfterMs = resetMs within [1, lockoutMs] (exactly lockoutMs when this call
 * started it, which only a recorded failure can; an escalating rule's within [1, its longest
 * lockout], at least lockoutMs when this call or this read started it); an open answer waits 0,
 * keeps at least one attempt, and resets within windowMs (0 exactly when nothing is counted); a
 * success clears all; a write-back always answers the lockout in force.
 */
export function failureReplyValid(
  reply: unknown,
  rule: FailureRule,
  op: FailureOp,
): reply is ScriptReply {
  // A sixth field (1) marks a lockout in force that this call ended sooner than it was stored.
  if (!isFiveIntegers(reply) && !(isSpentReply(reply) && reply[0] === 0 && reply[5] === 1))
    return false;
  const [allowed, remaining, retry, reset, started] = reply;
  // A ban in force (3) lasts its own length, which lockoutMs does not bound.
  if (started === 3)
    return (
      allowed === 0 && remaining === 0 && retry >= 1 && retry <= MAX_HELD_MS && reset === retry
    );
  // A ban call answers the lockout in force, ban or not.
  if (op === 'b') return allowed === 0 && started === 0 && failureReplyValid(reply, rule, 'k');
  const recorded = op === 'r' || op === 'd';
  // 4: a lockout this read started (a lowered maxAttempts), on any call but a write-back.
  if (started !== 0 && (started !== 1 || !recorded) && (started !== 4 || op === 'w')) return false;
  if (allowed === 0) {
    const longest = longestLockout(rule);
    return (
      remaining === 0 &&
      retry >= 1 &&
      retry <= longest &&
      reset === retry &&
      (started === 0 ||
        (rule.escalate === undefined ? retry === rule.lockoutMs : retry >= rule.lockoutMs))
    );
  }
  if (allowed !== 1 || op === 'w' || retry !== 0 || started !== 0) return false;
  if (op === 's') return remaining === rule.maxAttempts && reset === 0;
  if (remaining < 1 || remaining > rule.maxAttempts) return false;
  if (recorded && remaining === rule.maxAttempts) return false;
  return remaining === rule.maxAttempts ? reset === 0 : reset >= 1 && reset <= rule.windowMs;
}

export const isPong = (reply: unknown): reply is 'PONG' => String(reply) === 'PONG';

/**
 * A refund answers 1 when it gave something back, 2 when it gave back to a window that refused a
 * unit call just before (other processes may hold that refusal), else 0.
 */
export const isRefundReply = (reply: unknown): reply is 0 | 1 | 2 =>
  reply === 0 || reply === 1 || reply === 2;

export const isDelReply = (reply: unknown): reply is number => isInteger(reply) && reply >= 0;

export const isTimeReply = (reply: unknown): reply is [unknown, unknown] =>
  Array.isArray(reply) && reply.length === 2 && reply.every((part) => /^\d+$/.test(String(part)));

export const isRangeReply = (reply: unknown): reply is unknown[] =>
  Array.isArray(reply) &&
  (reply.length % 2 === 0 || reply.every((pair) => Array.isArray(pair) && pair.length === 2));

export const isMembersReply = (reply: unknown): reply is unknown[] => Array.isArray(reply);

export const isWaitReply = (reply: unknown): reply is number => isInteger(reply) && reply >= 0;

export function isNoScript(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.startsWith('NOSCRIPT');
}

/** Redis refused a script whose keys hash to several Cluster slots. */
export function isCrossSlot(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.startsWith('CROSSSLOT');
}

export function isScanReply(reply: unknown): reply is [unknown, unknown[]] {
  return (
    Array.isArray(reply) &&
    reply.length === 2 &&
    /^\d+$/.test(String(reply[0])) &&
    Array.isArray(reply[1]) &&
    reply[1].every((k) => typeof k === 'string' || k instanceof Uint8Array)
  );
}

/** A trust query answers one 0 or 1 per group asked about. */
export const isTrustedReply = (reply: unknown, groups: number): reply is (0 | 1)[] =>
  Array.isArray(reply) && reply.length === groups && reply.every((one) => one === 0 || one === 1);

export const isRestampReply = (reply: unknown): reply is 0 | 1 => reply === 0 || reply === 1;
