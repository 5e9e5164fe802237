import type { TrustRule } from '@portcullis/core';
import type { Fallback } from './fallback.js';
import { isTrustedReply } from './replies.js';
import { ScriptCall } from './script-call.js';
import type { Shared } from './shared.js';
import { TRUST_SCRIPT, TRUST_SCRIPT_SHA, trustKeys } from './trust-script.js';

/**
 * The trust-table calls (trust-script.ts): one script call each on the table's keys (one hash
 * slot), prepared like the failure calls so that a batch can carry them.
 */
export class TrustCalls {
  constructor(
    private readonly s: Shared,
    private readonly fallback: Fallback,
  ) {}

  /** `member` authenticated for `group`: the call, or nothing during an outage (kept locally). */
  trust(
    table: string,
    group: string,
    member: string,
    rule: TrustRule,
  ): ScriptCall<undefined> | undefined {
    const s = this.s;
    if (!s.outage.available()) {
      this.fallback.trust(table, group, member, rule, undefined);
      return undefined;
    }
    const args = this.#args(
      table,
      'a',
      String(rule.trustMs),
      String(rule.maxTrusted),
      group,
      member,
    );
    return new ScriptCall(
      args,
      TRUST_SCRIPT,
      false,
      (r): r is 1 => r === 1,
      () => {
        if (s.outage.down) s.outage.up();
        return undefined;
      },
      (error: unknown) => {
        this.fallback.trust(table, group, member, rule, error);
        return undefined;
      },
    );
  }

  /** Which of `groups` `member` holds a live trust of: the call, or the answer at once. */
  trusted(
    table: string,
    member: string,
    groups: readonly string[],
    rule: TrustRule,
  ): ScriptCall<boolean[]> | boolean[] {
    const s = this.s;
    if (groups.length === 0) return [];
    if (!s.outage.available()) return this.fallback.trusted(table, member, groups, rule, undefined);
    const args = this.#args(table, 'q', String(rule.trustMs), member, ...groups);
    return new ScriptCall(
      args,
      TRUST_SCRIPT,
      false,
      (r): r is (0 | 1)[] => isTrustedReply(r, groups.length),
      (reply) => {
        if (s.outage.down) s.outage.up();
        return (reply as (0 | 1)[]).map((one) => one === 1);
      },
      (error: unknown) => this.fallback.trusted(table, member, groups, rule, error),
    );
  }

  /** `EVALSHA <trust sha> 5 <table keys> <op> <trustMs> <now> …rest`. */
  #args(table: string, op: string, trustMs: string, ...rest: string[]): string[] {
    const s = this.s;
    return [
      'EVALSHA',
      TRUST_SCRIPT_SHA,
      '5',
      ...trustKeys(s.prefix, table),
      op,
      trustMs,
      s.args.trustNow(),
      ...rest,
    ];
  }
}
