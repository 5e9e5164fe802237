import type { Decision, FailureRule, WindowRule } from '@portcullis/core';

/**
 * Options of the local deny table (`RedisStore`'s `localDeny`). Every number is an integer.
 */
export interface LocalDenyOptions {
  /**
   * The most refusals held at once (one per key). When full, the entry learnt longest ago goes
   * (O(1)): a flood of distinct refused keys costs at most this many entries. @default 10000
   */
  maxEntries?: number;
  /**
   * The longest an entry answers without asking Redis, from the moment Redis decided (the request
   * was sent). It bounds how stale a local refusal can be when an invalidation never arrives (no
   * `subscribe`, a message lost while the subscriber was disconnected, a limit reconfigured in
   * another process). @default 1000
   */
  maxStaleMs?: number;
}

/** Keys longer than this are never held (they go to Redis): limiter keys are far shorter. */
export const MAX_DENY_KEY_LENGTH = 1024;

/** What an entry stands for: a lockout, an exhausted fixed window, a blocked sliding window. */
const LOCK = 0;
const FIXED = 1;
const SLIDING = 2;

/**
 * One refusal Redis answered, in this process's clock. The rule's numbers are kept so that
 * another rule on the same key (a reconfigured limit, another algorithm) never hits it.
 */
interface Entry {
  kind: typeof LOCK | typeof FIXED | typeof SLIDING;
  /** limit (windows) or maxAttempts. */
  a: number;
  /** windowMs. */
  b: number;
  /** lockoutMs (failures), 0 for windows. */
  c: number;
  /**
   * An escalating failure rule's factor and maxLockoutMs (0 and 0 otherwise): a call under another
   * escalation rewrites the key's expiry in Redis, so it is Redis' to answer.
   */
  f: number;
  m: number;
  /**
   * A lockout learnt from a call that wrote the key under exactly this rule (a failure, a ban):
   * only then is a failure answered locally, since a failure during a lockout re-rules the key's
   * expiry in Redis (as in memory) and the last write may have been another rule's.
   */
  ruled: boolean;
  /** When Redis decided at the latest: the local time the request was sent. */
  from: number;
  /** `from + maxStaleMs`: after this the entry answers nothing. */
  staleAt: number;
  /** Until when every call of the rule is refused (exclusive). */
  until: number;
  /** When the window's state drains (`resetMs`); equals `until` except for the sliding window. */
  resetAt: number;
}

/**
 * The refusals this process learnt from Redis, answered locally until they end. Only what is
 * refused for EVERY later call of the same rule until a known instant is held, so a local answer
 * equals, field for field, what Redis would have answered (see {@link LocalDeny.learnWindow} and
 * {@link LocalDeny.learnFailure}). Entries expire lazily; a clock that steps back before the
 * moment an entry was learnt drops it (Redis, which clamps, answers instead).
 */
export class LocalDeny {
  readonly maxEntries: number;
  readonly maxStaleMs: number;
  /** Insertion order = the order entries were learnt (a refreshed entry moves to the end). */
  readonly #map = new Map<string, Entry>();
  /** Calls answered locally since the store was made. */
  answered = 0;

  constructor(maxEntries: number, maxStaleMs: number) {
    this.maxEntries = maxEntries;
    this.maxStaleMs = maxStaleMs;
  }

  get size(): number {
    return this.#map.size;
  }

  /** The live entry of `key` for exactly this rule, else undefined (a dead one is dropped). */
  #live(
    key: string,
    kind: number,
    a: number,
    b: number,
    c: number,
    now: number,
    f = 0,
    m = 0,
  ): Entry | undefined {
    const e = this.#map.get(key);
    if (e === undefined) return undefined;
    if (now < e.from || now >= e.until) {
      this.#map.delete(key);
      return undefined;
    }
    // A stale lockout answers nothing but stays until Redis' answer replaces it: that answer
    // (a check's) keeps what the entry knew of the rule the key was last written under.
    if (now >= e.staleAt) {
      if (e.kind !== LOCK) this.#map.delete(key);
      return undefined;
    }
    return e.kind === kind && e.a === a && e.b === b && e.c === c && e.f === f && e.m === m
      ? e
      : undefined;
  }

  /**
   * The local answer to `consume(key, rule, cost)` (`cost` undefined: a peek), or undefined when
   * Redis must decide. A blocked sliding window is answered for a unit cost, and for a cost above
   * the limit (always refused, one window advertised); other costs wait differently: Redis.
   */
  window(
    key: string,
    rule: WindowRule,
    cost: number | undefined,
    now: number,
  ): Decision | undefined {
    if (this.#map.size === 0 || rule.algorithm === 'token-bucket') return undefined;
    const kind = rule.algorithm === 'fixed-window' ? FIXED : SLIDING;
    const e = this.#live(key, kind, rule.limit, rule.windowMs, 0, now);
    if (e === undefined) return undefined;
    let retry = e.until - now;
    if (kind === SLIDING && cost !== undefined && cost !== 1) {
      if (cost <= rule.limit) return undefined;
      retry = rule.windowMs;
    }
    this.answered++;
    return {
      allowed: false,
      reason: 'limited',
      limit: rule.limit,
      remaining: 0,
      retryAfterMs: retry,
      resetMs: e.resetAt - now,
      key,
    };
  }

  /**
   * The local answer to a failure operation on `key` (every one answers a lockout alike), or
   * undefined when Redis must decide; `counts`: a failure, answered only from an entry learnt
   * from a write under this rule.
   */
  failure(key: string, rule: FailureRule, now: number, counts: boolean): Decision | undefined {
    if (this.#map.size === 0) return undefined;
    const x = rule.escalate;
    const e = this.#live(
      key,
      LOCK,
      rule.maxAttempts,
      rule.windowMs,
      rule.lockoutMs,
      now,
      x?.factor,
      x?.maxLockoutMs,
    );
    if (e === undefined || (counts && !e.ruled)) return undefined;
    this.answered++;
    const left = e.until - now;
    return {
      allowed: false,
      reason: 'locked',
      limit: rule.maxAttempts,
      remaining: 0,
      retryAfterMs: left,
      resetMs: left,
      key,
    };
  }

  /**
   * Learns from Redis' answer `d` to a window call of `cost` (`undefined`: a peek) sent at `from`:
   * - a fixed window with nothing left (`remaining` 0, refused or allowed) refuses every cost until
   *   it resets: held until `from + resetMs`;
   * - a sliding window that refused a unit call is blocked until `from + retryAfterMs`: its weighted
   *   count only decays, and nothing can pass (so nothing changes it) before then;
   * - a peek teaches nothing: it does not re-rule the stored state, whose expiry may be another
   *   rule's; a token bucket is never held.
   * Otherwise the entry of `key` is kept only when Redis refused a unit under the same rule (the
   * state is frozen while refused), else dropped: the key's state may have changed kind, rule or count.
   */
  learnWindow(
    key: string,
    rule: WindowRule,
    cost: number | undefined,
    d: Decision,
    from: number,
  ): void {
    if (cost !== undefined && d.remaining === 0 && key.length <= MAX_DENY_KEY_LENGTH) {
      if (rule.algorithm === 'fixed-window' && d.resetMs > 0) {
        this.#set(
          key,
          FIXED,
          rule.limit,
          rule.windowMs,
          0,
          from,
          from + d.resetMs,
          from + d.resetMs,
        );
        return;
      }
      if (rule.algorithm === 'sliding-window' && !d.allowed && cost === 1) {
        this.#set(
          key,
          SLIDING,
          rule.limit,
          rule.windowMs,
          0,
          from,
          from + d.retryAfterMs,
          from + d.resetMs,
        );
        return;
      }
    }
    if (this.#map.size === 0) return;
    const e = this.#map.get(key);
    if (e === undefined) return;
    const kind = rule.algorithm === 'fixed-window' ? FIXED : SLIDING;
    const frozen =
      rule.algorithm !== 'token-bucket' &&
      !d.allowed &&
      d.remaining === 0 &&
      e.kind === kind &&
      e.a === rule.limit &&
      e.b === rule.windowMs;
    if (!frozen) this.#map.delete(key);
  }

  /**
   * Learns from a failure decision sent at `from`: a lockout refuses every call until it ends.
   * `wrote`: the call re-ruled the key (a failure, a ban); else (a check, a success) an entry that
   * was learnt from a write under this very rule stays one.
   */
  learnFailure(key: string, rule: FailureRule, d: Decision, from: number, wrote: boolean): void {
    if (d.reason === 'locked' && key.length <= MAX_DENY_KEY_LENGTH) {
      const until = from + d.retryAfterMs;
      const x = rule.escalate;
      const known = wrote ? undefined : this.#map.get(key);
      const ruled =
        wrote ||
        (known?.ruled === true &&
          known.kind === LOCK &&
          known.a === rule.maxAttempts &&
          known.b === rule.windowMs &&
          known.c === rule.lockoutMs &&
          known.f === (x?.factor ?? 0) &&
          known.m === (x?.maxLockoutMs ?? 0));
      this.#set(
        key,
        LOCK,
        rule.maxAttempts,
        rule.windowMs,
        rule.lockoutMs,
        from,
        until,
        until,
        x?.factor,
        x?.maxLockoutMs,
        ruled,
      );
      return;
    }
    this.#map.delete(key);
  }

  #set(
    key: string,
    kind: Entry['kind'],
    a: number,
    b: number,
    c: number,
    from: number,
    until: number,
    resetAt: number,
    f = 0,
    m = 0,
    ruled = false,
  ): void {
    if (until <= from) {
      this.#map.delete(key);
      return;
    }
    const entry: Entry = {
      kind,
      a,
      b,
      c,
      f,
      m,
      ruled,
      from,
      staleAt: from + this.maxStaleMs,
      until,
      resetAt,
    };
    // Re-inserted at the end: insertion order stays the order entries were learnt in.
    if (!this.#map.delete(key) && this.#map.size >= this.maxEntries) {
      // Full: the entry learnt longest ago goes (its staleness cap is the soonest). O(1).
      const oldest = this.#map.keys().next();
      if (!oldest.done) this.#map.delete(oldest.value);
    }
    this.#map.set(key, entry);
  }

  /** Forgets `key` (a reset, a refund, an invalidation). */
  delete(key: string): void {
    if (this.#map.size > 0) this.#map.delete(key);
  }

  clear(): void {
    this.#map.clear();
  }
}
