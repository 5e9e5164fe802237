import {
  type Clock,
  type Decision,
  type FailureDecision,
  type FailureRule,
  type LeaseAnswer,
  type LeaseRule,
  MemoryStore,
  type MemoryStoreOptions,
  type Timers,
  type TrustRule,
  type WindowRule,
} from '@portcullis/core';
import { withoutUndefined } from '@portcullis/core/adapter';
import { type FailureCallOp, lockedDecision } from './decisions.js';
import { nested } from './options.js';
import type { Shared } from './shared.js';

/**
 * The fallback store of the `fallback` option: a `MemoryStore` on the store's clock and timers. A
 * bad option of it is reported under its own name (`fallback.maxEntries`), not the memory store's.
 */
export function fallbackStore(
  clock: Clock | undefined,
  timers: Timers | undefined,
  options: MemoryStoreOptions | undefined,
): MemoryStore {
  return nested(
    'fallback',
    () => new MemoryStore({ ...withoutUndefined({ clock, timers }), ...options }),
  );
}

/**
 * Every answer made without Redis (an outage, or a call that failed): under `fallback` the
 * fallback store decides, under `open` and `closed` the outage's store-error decision does; a
 * lockout this process has seen refuses under every policy. Each call that failed is a store error
 * (logged once per outage), and each degraded decision is counted by the outage.
 */
export class Fallback {
  constructor(private readonly s: Shared) {}

  /** The shared state, once the error of the call that failed (none during an outage) is noted. */
  #failed(error: unknown): Shared {
    if (error !== undefined) this.s.outage.fail(error);
    return this.s;
  }

  /** The fallback store for a write that only it keeps (under `fallback`; lost under the others). */
  #kept(error: unknown): MemoryStore | undefined {
    const s = this.#failed(error);
    return s.policy === 'fallback' ? s.local : undefined;
  }

  /** A consume of `cost`, or a peek (`cost` undefined). */
  window(key: string, rule: WindowRule, cost: number | undefined, error: unknown): Decision {
    const s = this.#failed(error);
    let d: Decision;
    if (s.policy === 'fallback') {
      const local = cost === undefined ? s.local.peek(key, rule) : s.local.consume(key, rule, cost);
      d = local.reason === 'overflow' ? local : { ...local, reason: 'fallback' };
    } else {
      d = s.outage.storeError(key, rule.limit);
    }
    return s.outage.announce(d);
  }

  /** A refund Redis could not take: under `fallback` the fallback store gets it, else it is lost. */
  refund(key: string, rule: WindowRule, cost: number, agoMs: number, error: unknown): void {
    this.#kept(error)?.refund(key, rule, cost, agoMs);
  }

  /** A failure call; a lockout the fallback store starts is remembered, to be written back. */
  failure(
    key: string,
    rule: FailureRule,
    op: FailureCallOp,
    error: unknown,
    member?: string,
  ): FailureDecision {
    const s = this.#failed(error);
    const now = s.clock.now();
    const seen = s.seen.left(key, rule, now);
    let d: FailureDecision;
    if (seen > 0) {
      // Under every policy a lockout this process has seen keeps refusing; nothing is counted.
      d = lockedDecision(key, rule, seen, 'fallback');
    } else if (s.policy === 'fallback') {
      const local =
        op === 'r'
          ? s.local.recordFailure(key, rule)
          : op === 'd'
            ? s.local.recordDistinct(key, member as string, rule)
            : op === 'k'
              ? s.local.checkFailures(key, rule)
              : s.local.recordSuccess(key, rule);
      // A lockout started during the outage: remember it, and write it back when Redis returns.
      if ((local as FailureDecision).lockoutStarted)
        s.seen.remember(key, now + local.retryAfterMs, rule, true, now);
      d = local.reason === 'overflow' ? local : { ...local, reason: 'fallback' };
    } else {
      d = s.outage.storeError(key, rule.maxAttempts);
    }
    return s.outage.announce(d);
  }

  /** A ban by hand: the fallback store bans, and the ban is written back when Redis returns. */
  ban(key: string, rule: FailureRule, ms: number, error: unknown): FailureDecision {
    const s = this.#failed(error);
    const d = s.local.ban(key, rule, ms);
    if (d.reason === 'locked') {
      const now = s.clock.now();
      s.seen.remember(key, now + d.retryAfterMs, rule, true, now);
    }
    return s.outage.announce(d.reason === 'overflow' ? d : { ...d, reason: 'fallback' });
  }

  /** A trust write: kept by the fallback store under `fallback`, else not kept. */
  trust(table: string, group: string, member: string, rule: TrustRule, error: unknown): void {
    this.#kept(error)?.trust(table, group, member, rule);
  }

  /** A trust read: the fallback store's under `fallback`; every group under `open`, none else. */
  trusted(
    table: string,
    member: string,
    groups: readonly string[],
    rule: TrustRule,
    error: unknown,
  ): boolean[] {
    const s = this.#failed(error);
    if (s.policy === 'fallback') return s.local.trusted(table, member, groups, rule);
    return groups.map(() => s.policy === 'open');
  }

  /**
   * A lease Redis could not take: under `fallback` the fallback store holds it (this process's
   * share of the limit), under `open` it is let through, under `closed` refused.
   */
  acquire(key: string, rule: LeaseRule, lease: string, error: unknown): LeaseAnswer {
    const s = this.#failed(error);
    let a: LeaseAnswer;
    if (s.policy === 'fallback') a = { ...s.local.acquire(key, rule, lease), reason: 'fallback' };
    else if (s.policy === 'open') a = { acquired: true, held: 0, reason: 'fallback' };
    else a = { acquired: false, held: 0, reason: 'store-error' };
    const left = a.acquired ? Math.max(0, rule.max - a.held) : 0;
    s.outage.announce({
      allowed: a.acquired,
      reason: a.reason as 'fallback' | 'store-error',
      limit: rule.max,
      remaining: left,
      retryAfterMs: 0,
      resetMs: 0,
      key,
    });
    return a;
  }
}
