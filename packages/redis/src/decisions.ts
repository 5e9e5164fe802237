import type { Decision, FailureDecision, FailureRule } from '@portcullis/core';
import type { ScriptReply } from './replies.js';

/** The failure calls of the store script (see script.ts): check, record, distinct, success. */
export type FailureCallOp = 'k' | 'r' | 'd' | 's';

/**
 * A (validated) script reply as a decision: `[allowed, remaining, retryAfterMs, resetMs, code]`,
 * code 1 marking the call that started a lockout.
 */
export function replyDecision(
  reply: ScriptReply,
  limit: number,
  key: string,
  refused: 'limited' | 'locked',
): FailureDecision {
  const allowed = reply[0] === 1;
  const d: Decision = {
    allowed,
    reason: allowed ? 'allowed' : refused,
    limit,
    remaining: reply[1],
    retryAfterMs: reply[2],
    resetMs: reply[3],
    key,
  };
  return reply[4] === 1 ? { ...d, lockoutStarted: true } : d;
}

/** The refusal of `key` by a lockout with `left` ms to go that this process holds itself. */
export function lockedDecision(
  key: string,
  rule: FailureRule,
  left: number,
  reason: 'locked' | 'fallback',
): FailureDecision {
  return {
    allowed: false,
    reason,
    limit: rule.maxAttempts,
    remaining: 0,
    retryAfterMs: left,
    resetMs: left,
    key,
  };
}
