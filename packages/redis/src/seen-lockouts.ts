import type { FailureRule } from '@portcullis/core';

/** How many of the oldest seen lockouts a full table looks at to pick the one to forget. */
const SEEN_SAMPLE = 64;

/**
 * A lockout this process has seen, in its own clock, under `rule`; `pending` while it is to be
 * written back to Redis (the fallback started it, or Redis was found without it).
 */
export interface SeenLockout {
  until: number;
  rule: FailureRule;
  pending: boolean;
  /**
   * The longest time left it was seen with (the whole lockout when this process started it): an
   * escalating rule's lockout is clamped by its own length, as the script clamps it.
   */
  lengthMs: number;
}

/**
 * How far from now a lockout seen under `rule` may end (a clock that stepped back): `lockoutMs`,
 * or for an escalating rule the length it was seen with (at least lockoutMs, at most the longest).
 */
function bound(seen: SeenLockout, rule: FailureRule): number {
  const e = rule.escalate;
  if (e === undefined) return rule.lockoutMs;
  return Math.max(rule.lockoutMs, Math.min(seen.lengthMs, e.maxLockoutMs));
}

/**
 * The lockouts this process has seen, from Redis replies or started by the fallback, keyed like the
 * store: each refuses until it ends, whatever Redis says later (a store error never unlocks anyone,
 * nor does a Redis that forgot). At most `max` entries; times are this process's clock.
 */
export class SeenLockouts extends Map<string, SeenLockout> {
  readonly #max: number;

  constructor(max: number) {
    super();
    this.#max = max;
  }

  /** The time left (ms, 0 when none) of the lockout seen under `key`, clamped like the script. */
  left(key: string, rule: FailureRule, now: number): number {
    if (this.size === 0) return 0;
    const seen = this.get(key);
    if (seen === undefined) return 0;
    const most = bound(seen, rule);
    if (seen.until > now + most) seen.until = now + most;
    if (now >= seen.until) {
      this.delete(key);
      return 0;
    }
    return seen.until - now;
  }

  /**
   * Remembers a lockout of `rule` until `until`, `pending` a write-back when the fallback started
   * it. When full, an ended lockout goes first, else the one ending soonest among the
   * {@link SEEN_SAMPLE} remembered longest ago (lockouts of one rule end in the order they were
   * seen, so that is the one ending soonest of all; the bounded look keeps a flood of distinct
   * lockouts at constant cost per lockout). A lockout ending before every one looked at is not
   * remembered.
   */
  remember(key: string, until: number, rule: FailureRule, pending: boolean, now: number): void {
    const known = this.get(key);
    const lengthMs = until - now;
    if (known !== undefined) {
      if (until > known.until) known.until = until;
      if (lengthMs > known.lengthMs) known.lengthMs = lengthMs;
      known.rule = rule;
      if (pending) known.pending = true;
      return;
    }
    if (this.size >= this.#max) {
      let soonestKey: string | undefined;
      let soonest = Number.POSITIVE_INFINITY;
      let looked = 0;
      for (const [k, v] of this) {
        if (v.until <= now) {
          soonestKey = k;
          soonest = v.until;
          break;
        }
        if (v.until < soonest) {
          soonest = v.until;
          soonestKey = k;
        }
        if (++looked >= SEEN_SAMPLE) break;
      }
      if (soonestKey !== undefined) {
        if (soonest > now && soonest >= until) return;
        this.delete(soonestKey);
      }
    }
    this.set(key, { until, rule, pending, lengthMs });
  }
}
