import type { FailureDecision, FailureRule, MaybePromise } from '@portcullis/core';
import type { DurableLockouts } from './durability.js';
import { type FailureCallOp, lockedDecision, replyDecision } from './decisions.js';
import type { Fallback } from './fallback.js';
import type { IndexWriter } from './index-writer.js';
import type { Invalidations } from './invalidations.js';
import { failureReplyValid, type ScriptReply } from './replies.js';
import { lockoutArg, memberArg } from './script-args.js';
import { ScriptCall } from './script-call.js';
import { SCRIPT } from './script.js';
import type { Shared } from './shared.js';
import type { WriteBack } from './write-back.js';

/** The parts a failure call's answer reaches besides the shared ones. */
export interface FailureParts {
  readonly fallback: Fallback;
  readonly index: IndexWriter;
  readonly invalidations: Invalidations;
  readonly writeBack: WriteBack;
  readonly durability: DurableLockouts | undefined;
}

/**
 * The failure calls (check, record, distinct, success): each prepared as one script call, and its
 * reply reconciled with what this process knows (the lockouts it saw, its local deny table).
 */
export class FailureCalls {
  constructor(
    private readonly s: Shared,
    private readonly p: FailureParts,
  ) {}

  /**
   * A failure call of `key`, ready to send, or its answer at once: the fallback's during an
   * outage, the local deny table's during a lockout it holds.
   */
  prepare(
    key: string,
    rule: FailureRule,
    op: FailureCallOp,
    member?: string,
  ): ScriptCall<FailureDecision> | FailureDecision {
    const s = this.s;
    if (!s.outage.available()) return this.p.fallback.failure(key, rule, op, undefined, member);
    const from = s.clock.now();
    // A lockout held locally: a failure during it neither counts nor extends it, a success lifts
    // nothing, so every operation gets the same answer Redis would give.
    const denied = s.deny?.failure(key, rule, from, op === 'r' || op === 'd');
    if (denied !== undefined) return denied;
    const epoch = s.epoch;
    // During a lockout this process has seen, a failure counts nothing and a success clears
    // nothing, even in a Redis that lost the lockout: Redis is only asked for its state (a
    // failure as `v`, which re-rules the expiry of a lockout in force, as a counted one would).
    const sent =
      op !== 'k' && s.seen.left(key, rule, s.clock.now()) > 0 ? (op === 's' ? 'k' : 'v') : op;
    const args = s.args.of(
      key,
      sent,
      String(rule.maxAttempts),
      String(rule.windowMs),
      lockoutArg(rule),
      sent === 'd' ? memberArg(member as string) : undefined,
    );
    return new ScriptCall(
      args,
      SCRIPT,
      true,
      (r): r is ScriptReply => failureReplyValid(r, rule, sent),
      (reply) => this.#answer(reply as ScriptReply, rule, key, op, sent, from, epoch),
      (error: unknown) => this.p.fallback.failure(key, rule, op, error, member),
    );
  }

  /**
   * Redis' failure decision, reconciled with the lockouts this process has seen; a lockout in it
   * is remembered only when the reply is `current` (no reset reached this process since the call
   * was sent).
   */
  decide(
    reply: ScriptReply,
    rule: FailureRule,
    key: string,
    op: FailureCallOp,
    current: boolean,
  ): FailureDecision {
    const s = this.s;
    if (s.outage.down) s.outage.up();
    const d = replyDecision(reply, rule.maxAttempts, key, 'locked');
    const now = s.clock.now();
    if (reply[5] === 1) this.shortened(key, reply);
    const seen = s.seen.left(key, rule, now);
    if (d.reason === 'locked') {
      // Remember it, so that it keeps refusing if Redis fails or forgets it before it ends.
      if (reply[4] === 3) {
        // A ban is Redis' to bound (by its own length, which this process does not know): it
        // replaces whatever lockout this process remembered under the key.
        s.seen.delete(key);
        return d;
      }
      if (d.retryAfterMs >= seen) {
        if (current) s.seen.remember(key, now + d.retryAfterMs, rule, false, now);
        return d;
      }
      // Redis holds a shorter lockout than the one this process saw (one earned again after a
      // loss, or clamped by a shorter lockoutMs of a reconfigured rule): not written back, since
      // a clamp must stand; this process still refuses until its own ends.
      return lockedDecision(key, rule, seen, 'locked');
    }
    // Redis says no lockout (restarted empty, failed over, …): one this process saw still refuses,
    // and is written back.
    if (seen > 0) {
      if (current) this.p.writeBack.lost(key);
      return lockedDecision(key, rule, seen, 'locked');
    }
    if (op === 's' && s.local.size() > 0) {
      const local = s.local.recordSuccess(key, rule);
      if (local.reason === 'locked') return { ...local, reason: 'locked' };
    }
    return d;
  }

  /**
   * This call ended `key`'s lockout sooner than Redis held it (a clock that stepped back, a lowered
   * lockoutMs): what this process and the others remember of the longer one goes, so that none
   * refuses past the new end. Its lockout index entry is moved to the new end, so that a listing
   * takes lockouts in the order of their ends as they are, as MemoryStore's does.
   */
  shortened(key: string, reply: ScriptReply): void {
    const s = this.s;
    s.seen.delete(key);
    s.deny?.delete(key);
    void this.p.index.list(key, reply[2], reply[4] === 3);
    void this.p.invalidations.reopened(key);
  }

  /** A sent call's reply: the decision, what the deny table learns, the index and durability. */
  #answer(
    r: ScriptReply,
    rule: FailureRule,
    key: string,
    op: FailureCallOp,
    sent: string,
    from: number,
    epoch: number,
  ): MaybePromise<FailureDecision> {
    const s = this.s;
    // A reset (here, or elsewhere through `subscribe`) after the call went out makes its reply
    // old news: it answers this call, but teaches this process nothing to remember.
    const d = this.decide(r, rule, key, op, epoch === s.epoch);
    const deny = s.deny;
    if (deny !== undefined) {
      if (epoch === s.epoch) deny.learnFailure(key, rule, d, from, sent !== 'k' && sent !== 's');
      else deny.delete(key);
    }
    // A lockout this call wrote (started, or by a lowered maxAttempts: 4) goes into the index, and
    // with `durability` the decision waits for a replica to have it.
    if (r[0] === 0 && (r[4] === 1 || r[4] === 4 || r[2] === rule.lockoutMs)) {
      void this.p.index.list(key, r[2], false);
      const durability = this.p.durability;
      if (durability !== undefined) return durability.after(s.prefix + key, from).then(() => d);
    }
    return d;
  }
}
