import type { RawRequest } from '../client.js';
import type { Clock, Timers } from '../clock.js';
import { isPromise, type MaybePromise } from '../promise.js';
import type { Decision } from '../decision.js';
import type { HeaderMode } from '../headers.js';
import type { Algorithm, Store } from '../store.js';
import type { WindowLimiter, WindowLimiterReconfig } from '../window-limiter.js';
import type { HttpAnswer } from './answer.js';
import type { AdapterOptionSpec, GateClientOptions } from './gate-options.js';
import type { Ipv6Network } from '../ipv6-networks.js';
import { releaseSiblings } from './browser-budget.js';
import type { PerRequest } from './policies.js';
import { requestDenied, requestResult } from './refusals.js';
import { Refunds } from './request-refunds.js';
import { chargeRequest } from './request-charges.js';
import { checkCost } from '../window-limiter.js';
import { requestSpender } from './request-spend.js';
import { checkKey, requestAddress, requestKeyer } from './request-keys.js';
import { accessCheck, accessFirst, denial } from './access-gate.js';
import type { AccessList } from '../access/access-list.js';
import { parseRequestOptions, requestLimiters } from './request-limiters.js';
import { duplicateNameWarning, gateOpened, stackHeaders, stacking } from './stacked-headers.js';

/** Options of {@link createRequestGate} (and of every adapter's `rateLimit`). */
export interface RequestGateOptions<Req, Res = unknown> extends GateClientOptions {
  /**
   * Requests per window (bucket capacity for `token-bucket`), or a function of the request (sync
   * or async) for per-plan or per-tenant quotas. Each distinct (limit, window) is its own policy.
   * @default 60
   */
  limit?: PerRequest<Req, number>;
  /** Window length, or a function of the request (sync or async). @default 60_000 */
  windowMs?: PerRequest<Req, number>;
  /** @default 'fixed-window' */
  algorithm?: Algorithm;
  /** The policy name in `RateLimit` headers; namespaces keys in a shared store. @default 'default' */
  name?: string;
  /**
   * The bucket of a request. Receives the default key as its second argument (the trusted-proxy
   * aware client IP, IPv6 by its /64, `unknown` when unresolved), so `(req, ip) => req.user?.id ?? ip`
   * keeps the IPv6 protection.
   * @default the resolved client IP (IPv6 by /64), `unknown` when unresolved
   */
  key?: (req: Req, defaultKey: string) => MaybePromise<string>;
  /** Requests for which this returns true are not counted and get no headers. */
  skip?: (req: Req) => MaybePromise<boolean>;
  /** Units a request spends: a positive integer or a function of the request. @default 1 */
  cost?: number | ((req: Req) => MaybePromise<number>);
  /** `true`/`'ietf'`: IETF `RateLimit` fields; `'legacy'`: also `X-RateLimit-*`; `false`: none. @default 'ietf' */
  headers?: boolean | 'ietf' | 'legacy';
  /** An existing window limiter to use instead of building one from the numbers above. */
  limiter?: WindowLimiter;
  /** Where state lives. @default a new MemoryStore */
  store?: Store;
  /** Most keys in the built-in memory store. @default 10_000 */
  maxEntries?: number;
  /** Time source for the built-in store. @default systemClock */
  clock?: Clock;
  /** Timers for the built-in store's sweep. @default systemTimers */
  timers?: Timers;
  /** Count and advertise, but never refuse. @default false */
  dryRun?: boolean;
  /** IPv6 clients are keyed by this prefix by default; `false` = full address. @default 64 */
  ipv6Subnet?: number | false;
  /**
   * Budgets per IPv6 network beside each client's own (docs/design.md#ipv6-networks), so that
   * rotating through a /48 does not multiply the requests: `true` is a /56 with 4 × `limit` and a
   * /48 with 16 ×. Needs a fixed `limit` and `windowMs`. @default false
   */
  ipv6Networks?: boolean | readonly Ipv6Network[];
  /**
   * Give a request's units back when it succeeded (see `requestWasSuccessful`): only failures
   * count, e.g. for a login route. Counted up front and refunded after, so no race lets extra
   * requests through. @default false
   */
  skipSuccessfulRequests?: boolean;
  /** Give a request's units back when it failed (an aborted request counts as failed). @default false */
  skipFailedRequests?: boolean;
  /**
   * Whether a finished request succeeded, for the two options above. Runs after the response.
   * @default status < 400 (and not aborted)
   */
  requestWasSuccessful?: (req: Req, res: Res) => MaybePromise<boolean>;
  /**
   * What a request cost beyond `cost`, known once its response ended (tokens a model generated,
   * bytes sent): a non-negative integer, sync or async, spent in the window the request spent in
   * (docs/design.md#charge-after). When fewer units are left, what is left is spent, so the next
   * request is refused until the window has room again. Runs after the response, also when the
   * client left first.
   */
  chargeAfter?: (req: Req, res: Res) => MaybePromise<number>;
  /**
   * Operators' allow and deny rules (docs/design.md#access-lists), matched before anything is
   * counted: a deny is answered 403 `ACCESS_DENIED` with its reason (never `onLimited`), an allow
   * is let through uncounted and without headers, as `skip` would.
   */
  access?: AccessList;
  /** The account a request acts for, which account rules of `access` match. */
  account?: (req: Req) => MaybePromise<string | undefined>;
}

/** The part of a Node `ServerResponse` the gate watches to settle a request's outcome. */
export interface RawResponse {
  readonly statusCode: number;
  readonly writableFinished: boolean;
  once(event: 'close' | 'finish', listener: () => void): unknown;
}

/** What the request limiter concluded. */
export interface RequestResult {
  /** Whether the request goes on. */
  readonly ok: boolean;
  /** The limiter's decision. */
  readonly decision: Decision;
  /** Headers to set on every response (counters, and `Retry-After` when refused). */
  readonly headers: Readonly<Record<string, string>>;
  /** The full refusal (status 429 or 503, headers, JSON body) when `ok` is false. */
  readonly answer: HttpAnswer | undefined;
}

/** A compiled request limiter: one per middleware instance. */
export interface RequestGate<Req, Res = unknown> {
  /** Decides one request; `undefined` when `skip` said so. `raw` is the Node request behind `req`. */
  run(raw: RawRequest, req: Req): MaybePromise<RequestResult | undefined>;
  /**
   * The window limiter in use. With per-request `limit`/`windowMs` it is the limiter of the
   * default numbers over the same store; each policy met has a limiter of its own.
   */
  readonly limiter: WindowLimiter;
  /** Stops the timers of the store the gate built (a store you passed is yours to close). */
  close(): MaybePromise<void>;
  /**
   * Spends `units` more of the request's budgets now (docs/design.md#charge-after), where its
   * up-front units went: for a handler that learns what it cost before the response ends. A
   * request the gate did not count (`skip`, an access rule) is charged nothing. Resolves to the
   * units spent in its own budget (what was left, when fewer were).
   * @throws {RangeError} `ERR_PORTCULLIS_COST` for units that are not a non-negative integer
   */
  charge(raw: RawRequest, req: Req, units: number): Promise<number>;
  /**
   * Changes the numbers in force (see `WindowLimiter.reconfigure`); counts are kept and the
   * headers advertise the new policy from the next request. Not for per-request policies.
   */
  reconfigure(partial: WindowLimiterReconfig): void;
  /** True when the outcome of a request matters (`skipSuccessfulRequests` / `skipFailedRequests`). */
  readonly tracksOutcome: boolean;
  /**
   * Watches an allowed request's response and refunds its units when its outcome says so
   * (`rawRes` is the Node response; `res` what `requestWasSuccessful` receives). Adapters call it
   * only when `tracksOutcome` is true.
   */
  track(result: RequestResult, rawRes: RawResponse, req: Req, res: Res): void;
}

/**
 * The general request limiter (docs/design.md#request-limiter) for any HTTP framework: key, skip and cost per request,
 * IETF headers computed once per decision, and a ready-made 429/503 answer.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function createRequestGate<Req, Res = unknown>(
  options?: RequestGateOptions<Req, Res>,
  extra: AdapterOptionSpec = {},
): RequestGate<Req, Res> {
  const o = parseRequestOptions(options, extra, 'rateLimit');
  const mode: HeaderMode = o.headers === false ? false : o.headers === 'legacy' ? 'legacy' : 'ietf';
  const limiters = requestLimiters<Req>(o, mode);
  const { limiter, ownStore, networks } = limiters;
  const address = requestAddress(o);
  const defaultKey = requestKeyer(o, address);
  const access = accessCheck<Req>(o, address);
  const keyFn = o.key as ((req: Req, defaultKey: string) => MaybePromise<string>) | undefined;
  const skipFn = o.skip as ((req: Req) => MaybePromise<boolean>) | undefined;
  const costOpt = o.cost as number | ((req: Req) => MaybePromise<number>) | undefined;
  const refunds = new Refunds<Req, Res>(o);
  const spendFor = requestSpender(limiters, refunds, mode);

  function withCost(key: string, req: Req, raw: RawRequest): MaybePromise<RequestResult> {
    if (typeof costOpt !== 'function') return spendFor(key, costOpt ?? 1, req, raw);
    const cost = costOpt(req);
    return isPromise(cost)
      ? cost.then((c) => spendFor(key, c, req, raw))
      : spendFor(key, cost, req, raw);
  }

  function counted(raw: RawRequest, req: Req): MaybePromise<RequestResult> {
    if (keyFn === undefined) return withCost(defaultKey(raw), req, raw);
    const key = keyFn(req, defaultKey(raw));
    return isPromise(key)
      ? key.then((k) => withCost(checkKey(k), req, raw))
      : withCost(checkKey(key), req, raw);
  }

  const closeGate = gateOpened();
  const identity = {};
  const warnDuplicate = duplicateNameWarning(limiter.name, o.logger, o.warnings);

  /** Folds the policies of earlier limiters on the same request into this one's headers. */
  function stacked(raw: RawRequest, r: RequestResult): RequestResult {
    const headers = stackHeaders(raw, identity, limiter.name, r.headers, warnDuplicate);
    if (headers === r.headers) return r;
    return r.ok ? { ...r, headers } : requestResult(r.decision, headers);
  }

  function decide(raw: RawRequest, req: Req): MaybePromise<RequestResult> {
    const r = counted(raw, req);
    if (!stacking()) return r;
    return isPromise(r) ? r.then((x) => stacked(raw, x)) : stacked(raw, r);
  }

  function unskipped(raw: RawRequest, req: Req): MaybePromise<RequestResult | undefined> {
    if (skipFn === undefined) return decide(raw, req);
    const skip = skipFn(req);
    if (isPromise(skip)) return skip.then((s) => (s ? undefined : decide(raw, req)));
    return skip ? undefined : decide(raw, req);
  }

  const run = accessFirst(access, `rateLimit ${limiter.name}`, unskipped, (rule, raw, left) => {
    const { decision, answer } = denial(rule, defaultKey(raw), limiter.rule.limit, left);
    return requestDenied(decision, answer);
  });

  return {
    run: (raw: RawRequest, req: Req) => run(raw, req),
    async charge(raw: RawRequest, req: Req, units: number): Promise<number> {
      if (units !== 0) checkCost(units);
      if (access !== undefined && (await access.check(raw, req)) !== undefined) return 0;
      if (skipFn !== undefined && (await skipFn(req))) return 0;
      const key = checkKey(
        keyFn === undefined ? defaultKey(raw) : await keyFn(req, defaultKey(raw)),
      );
      return units === 0 ? 0 : chargeRequest(limiters, key, units, req, raw);
    },
    limiter,
    reconfigure: (partial: WindowLimiterReconfig) => limiter.reconfigure(partial),
    tracksOutcome: refunds.tracks,
    track: (result, rawRes, req, res) => refunds.track(result, rawRes, req, res),
    close(): MaybePromise<void> {
      closeGate();
      // The networks' stores are siblings of the limiter's: they go with a store the gate built.
      if (networks !== undefined && o.limiter === undefined && o.store === undefined)
        releaseSiblings(limiter.store);
      if (ownStore !== undefined) return ownStore.close();
      return o.limiter === undefined ? limiter.close() : undefined;
    },
  };
}
