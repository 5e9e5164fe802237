import { isPromise, type MaybePromise } from '../promise.js';
import { type Decision, withKey } from '../decision.js';
import { createHeaderWriter, type HeaderMode } from '../headers.js';
import { optionErrorCode } from '../errors.js';
import { POLICY_MEMBER } from '../limiter-store.js';
import { MAX_DURATION_MS } from '../options.js';
import {
  createWindowLimiter,
  type WindowLimiter,
  type WindowLimiterOptions,
} from '../window-limiter.js';

/** A number option that may depend on the request: a value, or a (sync or async) function of it. */
export type PerRequest<Req, T> = T | ((req: Req) => MaybePromise<T>);

/** One (limit, window) policy: its limiter and the header writer that advertises it. */
export interface Policy {
  readonly limiter: WindowLimiter;
  readonly writeHeaders: (d: Decision) => Readonly<Record<string, string>>;
  /** Prefix of this policy's keys in the shared store (`''` for a fixed policy). */
  readonly prefix: string;
}

/** Most distinct (limit, window) policies kept compiled; older ones are rebuilt when met again. */
export const MAX_POLICIES = 256;

function runtimeError(option: string, message: string): RangeError {
  const error = new RangeError(`Portcullis: ${message}`);
  (error as RangeError & { code: string }).code = optionErrorCode(option);
  return error;
}

function checkLimit(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value;
  throw runtimeError('limit', `limit(req) must return a positive integer, got ${String(value)}`);
}

function checkWindow(value: unknown): number {
  if (
    typeof value === 'number' &&
    Number.isInteger(value) &&
    value >= 1 &&
    value <= MAX_DURATION_MS
  )
    return value;
  throw runtimeError(
    'windowMs',
    `windowMs(req) must return an integer from 1 to ${MAX_DURATION_MS}, got ${String(value)}`,
  );
}

/**
 * The policies of a `rateLimit` whose `limit` or `windowMs` is a function of the request (per plan,
 * per tenant). Each distinct (limit, window) is its own policy, with keys of its own in one store,
 * so a user whose plan changes starts on the new numbers at once and no count is ever read under
 * another policy's rule. `base` holds the store, clock, name and the other limiter options.
 */
export function createPolicies<Req>(
  limit: PerRequest<Req, number>,
  windowMs: PerRequest<Req, number>,
  base: WindowLimiterOptions & { readonly name: string },
  mode: HeaderMode,
): (req: Req) => MaybePromise<Policy> {
  const compiled = new Map<string, Policy>();

  function policy(l: unknown, w: unknown): Policy {
    const lim = checkLimit(l);
    const win = checkWindow(w);
    if (lim * win > Number.MAX_SAFE_INTEGER)
      throw runtimeError('limit', `limit × windowMs must stay below 2^53, got ${lim} × ${win}`);
    const id = `q${lim}w${win}`;
    let found = compiled.get(id);
    if (found === undefined) {
      if (compiled.size >= MAX_POLICIES) compiled.delete(compiled.keys().next().value as string);
      const limiter = createWindowLimiter({
        ...base,
        limit: lim,
        windowMs: win,
        [POLICY_MEMBER]: true,
      } as WindowLimiterOptions);
      found = {
        limiter,
        writeHeaders: createHeaderWriter({ windowMs: win, name: base.name, mode }),
        prefix: `${id}:`,
      };
      compiled.set(id, found);
    }
    return found;
  }

  return function policyOf(req: Req): MaybePromise<Policy> {
    const l = typeof limit === 'function' ? limit(req) : limit;
    const w = typeof windowMs === 'function' ? windowMs(req) : windowMs;
    if (isPromise(l) || isPromise(w)) return Promise.all([l, w]).then(([a, b]) => policy(a, b));
    return policy(l, w);
  };
}

/** A decision of a prefixed policy key, reported under the caller's key. */
export function unprefixed(d: Decision, prefix: string): Decision {
  return prefix === '' || !d.key.startsWith(prefix) ? d : withKey(d, d.key.slice(prefix.length));
}
