import type { Decision, Store, WindowRule } from '@portcullis/core';
import { LinkedDecision } from '@portcullis/core/adapter';
import { replyDecision } from './decisions.js';
import type { Fallback } from './fallback.js';
import type { Invalidations } from './invalidations.js';
import { isRefundReply, type ScriptReply, windowReplyValid } from './replies.js';
import { CONSUME, PEEK, REFUND } from './script-args.js';
import { SCRIPT } from './script.js';
import type { Shared } from './shared.js';

/*
 * The script's time of an allowed consume's spend rides on the decision itself, for its refund: a
 * LinkedDecision (a private field, invisible to spreads, JSON and deep equality). A WeakMap entry
 * per allowed decision cost about 1 µs of CPU and garbage collection, a non-enumerable property
 * (Object.defineProperty) about 0.27 µs (bench/NOTES.md); the class about 15 ns.
 */

/**
 * The window calls (consume, peek, refund): one script call each, answered locally when the deny
 * table holds the refusal, and reconciled with the lockouts this process saw under the same key.
 */
export class WindowCalls {
  constructor(
    private readonly s: Shared,
    private readonly fallback: Fallback,
    private readonly invalidations: Invalidations,
  ) {}

  /** Spends `cost` units of `key` under `rule` in one script call; a refused call spends nothing. */
  consume(key: string, rule: WindowRule, cost: number): Promise<Decision> {
    return this.#call(key, rule, cost, CONSUME[rule.algorithm]);
  }

  /** What `consume(key, rule, 1)` would answer, changing nothing. */
  peek(key: string, rule: WindowRule): Promise<Decision> {
    return this.#call(key, rule, undefined, PEEK[rule.algorithm]);
  }

  /** A consume of `cost` or a peek (`cost` undefined): one script call, or the answer at once. */
  #call(key: string, rule: WindowRule, cost: number | undefined, op: string): Promise<Decision> {
    const s = this.s;
    if (!s.outage.available())
      return Promise.resolve(this.fallback.window(key, rule, cost, undefined));
    const now = s.clock.now();
    const denied = s.deny?.window(key, rule, cost, now);
    if (denied !== undefined) return Promise.resolve(denied);
    const epoch = s.epoch;
    const spends = String(cost ?? 1);
    const args = s.args.of(key, op, String(rule.limit), String(rule.windowMs), spends);
    return s.transport.script(
      args,
      SCRIPT,
      (r) => windowReplyValid(r, rule, cost === undefined),
      (reply) => {
        const d = this.#decision(reply, rule, key, cost, now, epoch);
        const at = reply[5];
        // The spend's own time rides on an allowed consume's decision, for its refund.
        return at === undefined || cost === undefined ? d : new LinkedDecision(d, d.key, at);
      },
      (error: unknown) => this.fallback.window(key, rule, cost, error),
    );
  }

  /**
   * Gives back `cost` units of `key` spent `agoMs` ago, to the window they were spent in (never
   * below zero; an absent key, another algorithm's state and a lockout are left alone), in one
   * script call on the Redis clock, as `MemoryStore.refund` does. Never rejects: a Redis failure
   * is a store error like any other (logged once per outage, then outage mode); under `fallback`
   * the fallback store gets the refund, under `open` and `closed` nothing is given back. A
   * refund is no decision: it is not published on `portcullis:store-error` and does not count
   * among an outage's degraded decisions. It changes no lockout, seen or not.
   */
  refund(...[key, rule, cost, agoMs, spent]: Parameters<Store['refund']>): Promise<void> {
    const s = this.s;
    // It may reopen the window: this process stops answering it locally at once.
    s.epoch++;
    s.deny?.delete(key);
    if (!s.outage.available()) {
      this.fallback.refund(key, rule, cost, agoMs, undefined);
      return Promise.resolve();
    }
    // When this store's consume made `spent`, the script's own time of the spend is exact, where
    // agoMs (the caller's clock, from when the reply arrived) is late by the reply's trip.
    const link = spent === undefined ? undefined : LinkedDecision.linkOf(spent);
    const ago = typeof link === 'number' ? `@${link}` : String(agoMs);
    const { limit, windowMs } = rule;
    const args = s.args.of(
      key,
      REFUND[rule.algorithm],
      String(limit),
      String(windowMs),
      String(cost),
      ago,
    );
    return s.transport.script(
      args,
      SCRIPT,
      isRefundReply,
      (given) => {
        if (s.outage.down) s.outage.up();
        // The window refused a unit call before: other processes may hold that refusal.
        return given === 2 ? this.invalidations.reopened(key) : undefined;
      },
      (error: unknown) => this.fallback.refund(key, rule, cost, agoMs, error),
    );
  }

  /**
   * A (validated) window reply to a call of `cost` (undefined: a peek) sent at `from`; the key's
   * algorithm is Redis', so a lockout seen under it is gone.
   */
  #decision(
    reply: ScriptReply,
    rule: WindowRule,
    key: string,
    cost: number | undefined,
    from: number,
    epoch: number,
  ): Decision {
    const s = this.s;
    // A window call never erases failure state (the script keeps it), so a lockout this process
    // saw under the same key stays remembered while it lasts; one that has ended is forgotten now,
    // as the script forgot it: a clock stepping back must not bring it back.
    if (s.seen.size > 0) {
      const seen = s.seen.get(key);
      if (seen !== undefined && seen.until <= s.clock.now()) s.seen.delete(key);
    }
    if (s.outage.down) s.outage.up();
    const d = replyDecision(reply, rule.limit, key, 'limited');
    const deny = s.deny;
    if (deny !== undefined) {
      // A refusal by failure state (2) is no window's: the deny table models windows only.
      if (epoch === s.epoch && reply[4] !== 2) deny.learnWindow(key, rule, cost, d, from);
      else deny.delete(key);
    }
    return d;
  }
}
