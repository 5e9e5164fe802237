import { byEnd } from '@portcullis/core/adapter';
import type { FailureRule, StoreLockout } from '@portcullis/core';
import type { FailureCalls } from './failure-calls.js';
import {
  indexEntries,
  LISTING_BATCH,
  registeredSlots,
  registryKey,
  slotIndexKey,
} from './lockout-index.js';
import {
  failureReplyValid,
  isMembersReply,
  isRangeReply,
  isTimeReply,
  type ScriptReply,
} from './replies.js';
import { lockoutArg } from './script-args.js';
import { SCRIPT } from './script.js';
import type { Shared } from './shared.js';

type Candidate = { key: string; until: number };

/**
 * The lockouts in force under a prefix, found in the lockout index (see `RedisStore.lockouts`):
 * the registry names the slots, each slot's sorted set its candidates, and each candidate is then
 * read as `checkFailures` reads it, soonest end first until `limit` are in force. Rejects on a
 * Redis failure (the store then lists what the fallback holds).
 */
export class LockoutListing {
  constructor(
    private readonly s: Shared,
    private readonly failures: FailureCalls,
  ) {}

  /** The lockouts in force whose keys start with `prefix`, soonest end first, at most `limit`. */
  async list(prefix: string, limit: number, rule: FailureRule): Promise<StoreLockout[]> {
    const now = await this.#now();
    const candidates = await this.#candidates(this.s.prefix + prefix, limit, now);
    const found: StoreLockout[] = [];
    // Read as a check reads them, soonest first, only as many as are still to be listed (the
    // memory store reads the same ones, so both leave the same state behind).
    for (let at = 0; at < candidates.length && found.length < limit; ) {
      const batch = candidates.slice(at, at + Math.min(LISTING_BATCH, limit - found.length));
      at += batch.length;
      const checked = await Promise.all(batch.map(({ key }) => this.#read(key, rule)));
      checked.forEach((reply, n) => {
        const key = (batch[n] as Candidate).key;
        if (this.#settled(key, reply, rule))
          found.push({ key, until: now + reply[2], retryAfterMs: reply[2], ban: reply[4] === 3 });
      });
    }
    this.s.outage.up();
    found.sort(byEnd);
    return found;
  }

  /** The script's time: the test clock's, or Redis `TIME` in milliseconds. */
  #now(): Promise<number> | number {
    const { scriptClock, transport } = this.s;
    if (scriptClock !== undefined) return scriptClock.now();
    return transport
      .deadline(() => transport.call(['TIME'], undefined), isTimeReply)
      .then(
        ([seconds, micros]) =>
          Number(String(seconds)) * 1000 + Math.floor(Number(String(micros)) / 1000),
      );
  }

  /** Every index entry under `wanted` (a prefixed key prefix) that ends after `now`, by end. */
  async #candidates(wanted: string, limit: number, now: number): Promise<Candidate[]> {
    const { prefix, transport } = this.s;
    const candidates: Candidate[] = [];
    const read = async (slot: number) => {
      const index = slotIndexKey(prefix, slot);
      const range = ['ZRANGEBYSCORE', index, `(${now}`, '+inf', 'WITHSCORES'];
      const reply = await transport.deadline(
        () => transport.call([...range, 'LIMIT', '0', String(limit)], index),
        isRangeReply,
      );
      candidates.push(...indexEntries(reply, wanted, prefix));
    };
    const registry = registryKey(prefix);
    const members = await transport.deadline(
      () => transport.call(['SMEMBERS', registry], registry),
      isMembersReply,
    );
    const slots = registeredSlots(members);
    for (let at = 0; at < slots.length; at += LISTING_BATCH)
      await Promise.all(slots.slice(at, at + LISTING_BATCH).map(read));
    candidates.sort(byEnd);
    return candidates;
  }

  /** `key`'s failure state as a check reads it (op `n`: it counts nothing). */
  #read(key: string, rule: FailureRule): Promise<ScriptReply> {
    const s = this.s;
    const args = s.args.of(
      key,
      'n',
      String(rule.maxAttempts),
      String(rule.windowMs),
      lockoutArg(rule),
    );
    return s.transport.run(args, SCRIPT, (r) => failureReplyValid(r, rule, 'n'));
  }

  /** What a read teaches this process; whether `key` is locked out now. */
  #settled(key: string, reply: ScriptReply, rule: FailureRule): boolean {
    const s = this.s;
    // A lockout this process saw is clamped under this rule as Redis' was (a check would do
    // both); the listing says what Redis holds. A lockout the read cut short (clamped under this
    // rule's own bound, say an escalation step) is forgotten everywhere, as after a check.
    if (reply[5] === 1) this.failures.shortened(key, reply);
    s.seen.left(key, rule, s.clock.now());
    // What the deny table learnt under another rule may no longer be what Redis holds.
    s.deny?.delete(key);
    return reply[0] === 0;
  }
}
