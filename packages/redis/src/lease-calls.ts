import type { LeaseAnswer, LeaseRule } from '@portcullis/core';
import type { Fallback } from './fallback.js';
import { LEASE_SCRIPT, LEASE_SCRIPT_SHA, leaseKey } from './lease-script.js';
import { ScriptCall } from './script-call.js';
import type { Shared } from './shared.js';

/** A reply of the lease script's acquire: `{ acquired (0|1), held }`. */
function isLeaseReply(reply: unknown): reply is [0 | 1, number] {
  return (
    Array.isArray(reply) &&
    reply.length === 2 &&
    (reply[0] === 0 || reply[0] === 1) &&
    Number.isSafeInteger(reply[1])
  );
}

/** The lease calls (lease-script.ts): one script call each, on one key (one hash slot). */
export class LeaseCalls {
  constructor(
    private readonly s: Shared,
    private readonly fallback: Fallback,
  ) {}

  /** Takes or renews `lease` of `key`: the call, or the fallback's answer during an outage. */
  acquire(key: string, rule: LeaseRule, lease: string): ScriptCall<LeaseAnswer> | LeaseAnswer {
    const s = this.s;
    if (!s.outage.available()) return this.fallback.acquire(key, rule, lease, undefined);
    const args = this.#args(key, 'a', lease, String(rule.max), String(rule.leaseMs));
    return new ScriptCall(
      args,
      LEASE_SCRIPT,
      false,
      isLeaseReply,
      (reply) => {
        if (s.outage.down) s.outage.up();
        const [acquired, held] = reply as [0 | 1, number];
        return { acquired: acquired === 1, held };
      },
      (error: unknown) => this.fallback.acquire(key, rule, lease, error),
    );
  }

  /**
   * Gives `lease` back: the call, or nothing during an outage. The fallback store forgets it too
   * (it holds the leases taken during an outage); a lease Redis does not hear of ends at leaseMs.
   */
  release(key: string, lease: string): ScriptCall<undefined> | undefined {
    const s = this.s;
    s.local.release(key, lease);
    if (!s.outage.available()) return undefined;
    return new ScriptCall(
      this.#args(key, 'r', lease),
      LEASE_SCRIPT,
      false,
      (r): r is 0 => r === 0,
      () => undefined,
      (error: unknown) => {
        s.outage.fail(error);
        return undefined;
      },
    );
  }

  /** `EVALSHA <lease sha> 1 <lease key> <op> <lease> <now> …rest`. */
  #args(key: string, op: string, lease: string, ...rest: string[]): string[] {
    const s = this.s;
    return [
      'EVALSHA',
      LEASE_SCRIPT_SHA,
      '1',
      leaseKey(s.prefix, key),
      op,
      lease,
      s.args.trustNow(),
      ...rest,
    ];
  }
}
