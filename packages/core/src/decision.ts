/**
 * Why a decision came out the way it did.
 * - `allowed`: under the limit.
 * - `exempt`: not counted at all (a clean direct-local client under loopback exemption).
 * - `limited`: a window or bucket is exhausted.
 * - `locked`: a failure limiter's lockout is in force.
 * - `overflow`: the store is full of lockouts/blocked windows and refuses to forget one.
 * - `fallback`: the shared store failed and an in-memory fallback decided.
 * - `store-error`: the store failed and its policy is to refuse (`onError: 'closed'`).
 * - `denied`: an operator's deny rule matched (docs/design.md#access-lists); nothing was counted.
 */
export type DecisionReason =
  | 'allowed'
  | 'exempt'
  | 'limited'
  | 'locked'
  | 'overflow'
  | 'fallback'
  | 'store-error'
  | 'denied';

/** The answer to every check. Refusals are data; nothing throws to mean "limited". */
export interface Decision {
  /** Whether the request may proceed. Always true in dry-run mode. */
  readonly allowed: boolean;
  /** Why; in dry-run mode, what would have happened. */
  readonly reason: DecisionReason;
  /** The configured limit (`limit` or `maxAttempts`). */
  readonly limit: number;
  /** Units left before the limit bites (0 when refused). */
  readonly remaining: number;
  /** How long to wait before retrying; 0 when allowed. */
  readonly retryAfterMs: number;
  /** Time until the window (or lockout) ends and the count is back to full. */
  readonly resetMs: number;
  /** The bucket key the decision is about (canonical IP, `/64` network, or opaque key). */
  readonly key: string;
  /** Present (true) only on decisions of a limiter in dry-run mode. */
  readonly dryRun?: true;
  /**
   * Which auth layer refused (docs/design.md#defence-in-depth): set on an auth gate's refusals
   * when its account limits or scope budget are on. Server-side only: every layer's refusal
   * answers the client the same way.
   */
  readonly layer?: 'client' | 'pair' | 'account' | 'scope' | 'spray' | 'ban';
}

/** Builds a decision object with a stable property order (one hidden class on the hot path). */
export function decision(
  allowed: boolean,
  reason: DecisionReason,
  limit: number,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
  key: string,
): Decision {
  return { allowed, reason, limit, remaining, retryAfterMs, resetMs, key };
}

/**
 * A decision that points at something the caller must not see (the store's own decision behind a
 * limiter's copy, a shared store's spend time): a private field, invisible to spreads, JSON and
 * deep equality, which a spread copy drops. Made in about 15 ns, where a non-enumerable property
 * cost about 270 ns (`Object.defineProperty` leaves V8's fast path: bench/NOTES.md).
 * For limiters and stores (`@portcullis/core/adapter`); nothing a user of Portcullis needs.
 */
export class LinkedDecision implements Decision {
  readonly allowed: boolean;
  readonly reason: DecisionReason;
  readonly limit: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetMs: number;
  readonly key: string;
  declare readonly dryRun?: true;
  declare readonly layer?: NonNullable<Decision['layer']>;
  readonly #link: unknown;

  /** `d` reported for `key`, linked to `link`. */
  constructor(d: Decision, key: string, link: unknown) {
    this.allowed = d.allowed;
    this.reason = d.reason;
    this.limit = d.limit;
    this.remaining = d.remaining;
    this.retryAfterMs = d.retryAfterMs;
    this.resetMs = d.resetMs;
    this.key = key;
    if (d.dryRun === true) (this as { dryRun?: true }).dryRun = true;
    if (d.layer !== undefined) (this as { layer?: NonNullable<Decision['layer']> }).layer = d.layer;
    this.#link = link;
  }

  /** What `d` links to (undefined for any other decision). */
  static linkOf(d: Decision): unknown {
    return #link in d ? (d as LinkedDecision).#link : undefined;
  }
}

/** The same decision reported for another key (the limiter's key rather than the store's). */
export function withKey(d: Decision, key: string): Decision {
  return d.key === key
    ? d
    : decision(d.allowed, d.reason, d.limit, d.remaining, d.retryAfterMs, d.resetMs, key);
}

/** A dry-run copy: allowed, flagged, the reason kept so operators see what would have happened. */
export function asDryRun(d: Decision): Decision {
  return { ...d, allowed: true, retryAfterMs: 0, dryRun: true };
}
