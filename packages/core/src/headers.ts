import type { Decision } from './decision.js';
import { retryAfterSeconds } from './error-shapes.js';
import { checkPolicyName } from './policy-name.js';

/** Which counters a response advertises: IETF fields, those plus `X-RateLimit-*`, or none. */
export type HeaderMode = 'ietf' | 'legacy' | false;

/** Options of {@link rateLimitHeaders}. */
export interface RateLimitHeaderOptions {
  /** The policy's window (for `w=`). */
  readonly windowMs: number;
  /**
   * The policy name in the IETF fields: printable ASCII other than `"` and `\` (it is written as an
   * RFC 9651 string). @default 'default'
   */
  readonly name?: string;
  /** @default 'ietf' */
  readonly mode?: HeaderMode;
}

/** The headers of an allowed decision with `mode: false`: one shared, frozen empty record. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The same text as one flat string. A concatenation is a rope (V8 cons string); Node checks every
 * header value with a regular expression, and a rope sends that check through a slow runtime path
 * that flattens it first, about 0.15 µs per response here. `trim` flattens it in a fast builtin,
 * and the value has no surrounding whitespace to lose.
 */
function flat(text: string): string {
  return text.trim();
}

/**
 * Builds a header writer for one policy; the constant `RateLimit-Policy` value is computed once.
 * Every policy name reaches a header through here (a `rateLimit`'s own, a window limiter passed to
 * it, each per-request policy, each member of a stacked list), so the name is checked here, once,
 * when the writer is built: at the construction of the gate, never per response.
 * @throws {PortcullisConfigError} `ERR_PORTCULLIS_NAME` for a name that is not a valid RFC 9651 string
 */
export function createHeaderWriter(
  options: RateLimitHeaderOptions,
): (d: Decision) => Readonly<Record<string, string>> {
  const name = checkPolicyName(options.name ?? 'default');
  const mode = options.mode ?? 'ietf';
  const policy = `"${name}";q=`;
  const windowPart = `;w=${Math.ceil(options.windowMs / 1000)}`;
  const prefix = `"${name}";r=`;
  // The policy only changes with the decision's limit: build its text once per limit, not per call.
  let policyLimit = Number.NaN;
  let policyText = '';
  return function writeHeaders(d: Decision): Readonly<Record<string, string>> {
    if (mode === false)
      return d.allowed ? NO_HEADERS : { 'Retry-After': String(retryAfterSeconds(d.retryAfterMs)) };
    if (d.limit !== policyLimit) {
      policyLimit = d.limit;
      policyText = policy + d.limit + windowPart;
    }
    const reset = Math.ceil(d.resetMs / 1000);
    const counters = flat(`${prefix}${d.remaining};t=${reset}`);
    // The common answer (IETF, allowed) is this literal alone: one object shape on the hot path.
    const out: Record<string, string> = { 'RateLimit-Policy': policyText, RateLimit: counters };
    if (mode === 'legacy') {
      out['X-RateLimit-Limit'] = String(d.limit);
      out['X-RateLimit-Remaining'] = String(d.remaining);
      out['X-RateLimit-Reset'] = String(reset);
    }
    if (!d.allowed) out['Retry-After'] = String(retryAfterSeconds(d.retryAfterMs));
    return out;
  };
}

/**
 * The response headers for a decision, as a plain record: IETF `RateLimit-Policy`
 * (`"<name>";q=<limit>;w=<windowSec>`) and `RateLimit` (`"<name>";r=<remaining>;t=<resetSec>`);
 * `mode: 'legacy'` adds `X-RateLimit-Limit/Remaining/Reset` (reset in seconds from now); `false`
 * sends no counters. A refused decision always carries `Retry-After` (ceil seconds, at least 1).
 * @throws {PortcullisConfigError} `ERR_PORTCULLIS_NAME` for a name holding `"`, `\`, a control
 * or a non-ASCII character (it would forge or break the structured field)
 */
export function rateLimitHeaders(
  decision: Decision,
  options: RateLimitHeaderOptions,
): Record<string, string> {
  // A record of the caller's own: the writer may hand out one shared, frozen record.
  return { ...createHeaderWriter(options)(decision) };
}
