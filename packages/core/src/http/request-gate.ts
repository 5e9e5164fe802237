import { compileClientRules, type RawRequest } from '../client.js';
import { type Clock, systemClock, type Timers } from '../clock.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { callSafely, tell } from '../safe-call.js';
import type { Decision } from '../decision.js';
import { requestRateLimitedError, storeUnavailableError } from '../error-shapes.js';
import type { Logger } from '../events.js';
import { createHeaderWriter, type HeaderMode } from '../headers.js';
import { subnetKey } from '../ip.js';
import {
  boolean,
  duration,
  either,
  exclusiveLimiter,
  func,
  integer,
  oneOf,
  parseOptions,
  withMethods,
} from '../options.js';
import type { Algorithm, Store } from '../store.js';
import { MemoryStore } from '../memory-store.js';
import {
  checkCost,
  createWindowLimiter,
  type WindowLimiter,
  type WindowLimiterReconfig,
} from '../window-limiter.js';
import type { Warnings } from '../warnings.js';
import { type HttpAnswer, jsonAnswer } from './answer.js';
import { type AdapterOptionSpec, clientOptionSpec } from './gate-options.js';
import { createPolicies, type PerRequest, type Policy, unprefixed } from './policies.js';
import { duplicateNameWarning, gateOpened, stackHeaders, stacking } from './stacked-headers.js';

/** Options of {@link createRequestGate} (and of every adapter's `rateLimit`). */
export interface RequestGateOptions<Req, Res = unknown> {
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
  /** Proxies whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[];
  /** Believe `X-Real-IP` from a trusted proxy. @default false */
  allowRealIpFallback?: boolean;
  /** Receives warnings. */
  logger?: Logger;
  /**
   * Misconfiguration warnings switched off, by code (`{ PORTCULLIS_DUPLICATE_POLICY: false }`);
   * the limiters the gate builds get the same.
   * @default every warning on
   */
  warnings?: Warnings;
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

const fn = func as (value: unknown, fail: (expected: string) => never) => never;

/** Whether the store counted the units of an allowed decision ('fallback': the fallback store did). */
function spends(d: Decision): boolean {
  return d.allowed && (d.reason === 'allowed' || d.reason === 'fallback');
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
  const where = 'rateLimit';
  const o = parseOptions(
    options,
    {
      ...extra,
      limit: either(integer(1), func, 'a positive integer or a function'),
      windowMs: either(duration(1), func, 'a positive integer (ms) or a function'),
      algorithm: oneOf<Algorithm>(['fixed-window', 'sliding-window', 'token-bucket']),
      name: (v: unknown, fail: (e: string) => never) =>
        typeof v === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(v)
          ? v
          : fail('a token of 1–64 letters, digits, "_", "." or "-"'),
      key: fn,
      skip: fn,
      cost: either(integer(1), func, 'a positive integer or a function'),
      headers: oneOf<boolean | 'ietf' | 'legacy'>([true, false, 'ietf', 'legacy']),
      limiter: withMethods<WindowLimiter>('consume', 'peek', 'reset', 'refund', 'reconfigure'),
      store: withMethods<Store>('consume', 'peek', 'refund', 'delete'),
      maxEntries: integer(1),
      clock: withMethods<Clock>('now'),
      timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
      dryRun: boolean,
      ipv6Subnet: either(integer(1, 128), oneOf([false]), 'an integer from 1 to 128 or false'),
      skipSuccessfulRequests: boolean,
      skipFailedRequests: boolean,
      requestWasSuccessful: fn,
      ...clientOptionSpec,
    },
    where,
  );
  exclusiveLimiter(
    o,
    ['limit', 'windowMs', 'algorithm', 'store', 'maxEntries', 'clock', 'timers', 'dryRun', 'name'],
    where,
  );
  const limitOpt = o.limit as PerRequest<Req, number> | undefined;
  const windowOpt = o.windowMs as PerRequest<Req, number> | undefined;
  const perRequest = typeof limitOpt === 'function' || typeof windowOpt === 'function';
  const mode: HeaderMode = o.headers === false ? false : o.headers === 'legacy' ? 'legacy' : 'ietf';
  const name = o.name ?? 'default';
  // Per-request policies share one store; the gate builds it when none is given, and closes it.
  const ownStore =
    perRequest && o.store === undefined
      ? new MemoryStore({
          ...(o.maxEntries !== undefined && { maxEntries: o.maxEntries }),
          ...(o.clock !== undefined && { clock: o.clock }),
          ...(o.timers !== undefined && { timers: o.timers }),
        })
      : undefined;
  const limiterOptions = {
    ...(o.algorithm !== undefined && { algorithm: o.algorithm }),
    ...(o.dryRun !== undefined && { dryRun: o.dryRun }),
    ...(o.name !== undefined && { name: o.name }),
    ...(o.logger !== undefined && { logger: o.logger }),
    ...(o.warnings !== undefined && { warnings: o.warnings }),
    ...(ownStore !== undefined
      ? { store: ownStore }
      : {
          ...(o.store !== undefined && { store: o.store }),
          ...(o.maxEntries !== undefined && { maxEntries: o.maxEntries }),
          ...(o.clock !== undefined && { clock: o.clock }),
          ...(o.timers !== undefined && { timers: o.timers }),
        }),
  };
  const limiter =
    o.limiter ??
    createWindowLimiter({
      ...(typeof limitOpt === 'number' && { limit: limitOpt }),
      ...(typeof windowOpt === 'number' && { windowMs: windowOpt }),
      ...limiterOptions,
    });
  let writerRule = limiter.rule;
  let writeHeaders = createHeaderWriter({
    windowMs: writerRule.windowMs,
    name: limiter.name,
    mode,
  });
  const policyOf = perRequest
    ? createPolicies<Req>(
        limitOpt ?? limiter.rule.limit,
        windowOpt ?? limiter.rule.windowMs,
        { ...limiterOptions, name },
        mode,
      )
    : undefined;
  const subnet = (o.ipv6Subnet ?? 64) as number | false;
  const { address } = compileClientRules({
    ...(o.trustedProxies !== undefined && { trustedProxies: o.trustedProxies }),
    ...(o.allowRealIpFallback !== undefined && { allowRealIpFallback: o.allowRealIpFallback }),
    ...(o.logger !== undefined && { logger: o.logger }),
    ...(o.warnings !== undefined && { warnings: o.warnings }),
  });
  const keyFn = o.key as ((req: Req, defaultKey: string) => MaybePromise<string>) | undefined;
  const skipFn = o.skip as ((req: Req) => MaybePromise<boolean>) | undefined;
  const costOpt = o.cost as number | ((req: Req) => MaybePromise<number>) | undefined;

  function defaultKey(raw: RawRequest): string {
    const client = address(raw);
    if (client === undefined) return 'unknown';
    // IPv4 keys are the canonical text already; IPv6 ones are cut to their network.
    return client.ip.v === 4 ? client.text : subnetKey(client.ip, subnet);
  }

  function answer(d: Decision, headers: Readonly<Record<string, string>>): RequestResult {
    if (d.allowed) return { ok: true, decision: d, headers, answer: undefined };
    const refusal =
      d.reason === 'store-error'
        ? jsonAnswer(503, storeUnavailableError())
        : jsonAnswer(429, requestRateLimitedError(d.retryAfterMs), headers);
    return { ok: false, decision: d, headers, answer: refusal };
  }

  function result(d: Decision): RequestResult {
    // A reconfigured limiter has a new rule object: advertise its window from now on.
    if (limiter.rule !== writerRule) {
      writerRule = limiter.rule;
      writeHeaders = createHeaderWriter({
        windowMs: writerRule.windowMs,
        name: limiter.name,
        mode,
      });
    }
    return answer(d, writeHeaders(d));
  }

  const skipSuccessful = o.skipSuccessfulRequests ?? false;
  const skipFailed = o.skipFailedRequests ?? false;
  const tracksOutcome = skipSuccessful || skipFailed;
  const wasSuccessful = o.requestWasSuccessful as
    | ((req: Req, res: Res) => MaybePromise<boolean>)
    | undefined;
  const clock = o.clock ?? systemClock;
  /** How to give back what an allowed decision spent; recorded only when outcomes matter. */
  const spent = new WeakMap<
    Decision,
    {
      limiter: WindowLimiter;
      key: string;
      cost: number;
      at: number;
      deletions: number | undefined;
      made: Decision;
    }
  >();

  /**
   * Records how to give back what `made` (the limiter's decision; `d` is what the request sees)
   * spent. The refund hands the limiter `made`, so a shared store knows exactly when the units
   * were spent, however late its answer arrived. `deletions` is the store's count of resets
   * before the call: after a reset the units are gone with the state, and are never given back.
   */
  function remember(
    d: Decision,
    made: Decision,
    lim: WindowLimiter,
    key: string,
    cost: number,
    deletions: number | undefined,
  ): void {
    // Only a decision that spent units can give them back: a dry run's would-be refusal (allowed,
    // reason 'limited' or 'overflow') and an 'open' store error counted nothing.
    if (tracksOutcome && spends(d))
      spent.set(d, { limiter: lim, key, cost, at: clock.now(), deletions, made });
  }

  function spend(key: string, cost: number): MaybePromise<RequestResult> {
    const c = cost === 1 ? 1 : checkCost(cost);
    if (!tracksOutcome) {
      const d = limiter.consume(key, c);
      return isPromise(d) ? d.then(result) : result(d);
    }
    const deletions = limiter.store.deletions;
    const d = limiter.consume(key, c);
    const done = (x: Decision) => {
      remember(x, x, limiter, key, c, deletions);
      return result(x);
    };
    return isPromise(d) ? d.then(done) : done(d);
  }

  function spendUnder(p: Policy, key: string, cost: number): MaybePromise<RequestResult> {
    const c = cost === 1 ? 1 : checkCost(cost);
    const deletions = tracksOutcome ? p.limiter.store.deletions : undefined;
    const finish = (d: Decision) => {
      const out = unprefixed(d, p.prefix);
      remember(out, d, p.limiter, p.prefix + key, c, deletions);
      return answer(out, p.writeHeaders(out));
    };
    const d = p.limiter.consume(p.prefix + key, c);
    return isPromise(d) ? d.then(finish) : finish(d);
  }

  function spendFor(key: string, cost: number, req: Req): MaybePromise<RequestResult> {
    if (policyOf === undefined) return spend(key, cost);
    const p = policyOf(req);
    return isPromise(p) ? p.then((q) => spendUnder(q, key, cost)) : spendUnder(p, key, cost);
  }

  function withCost(key: string, req: Req): MaybePromise<RequestResult> {
    if (typeof costOpt !== 'function') return spendFor(key, costOpt ?? 1, req);
    const cost = costOpt(req);
    return isPromise(cost) ? cost.then((c) => spendFor(key, c, req)) : spendFor(key, cost, req);
  }

  function checkKey(key: unknown): string {
    if (typeof key === 'string') return key;
    throw new TypeError(`Portcullis: key(req) must return a string, got ${typeof key}`);
  }

  function counted(raw: RawRequest, req: Req): MaybePromise<RequestResult> {
    if (keyFn === undefined) return withCost(defaultKey(raw), req);
    const key = keyFn(req, defaultKey(raw));
    return isPromise(key)
      ? key.then((k) => withCost(checkKey(k), req))
      : withCost(checkKey(key), req);
  }

  const closeGate = gateOpened();
  const identity = {};
  const warnDuplicate = duplicateNameWarning(limiter.name, o.logger, o.warnings);

  /** Folds the policies of earlier limiters on the same request into this one's headers. */
  function stacked(raw: RawRequest, r: RequestResult): RequestResult {
    const headers = stackHeaders(raw, identity, limiter.name, r.headers, warnDuplicate);
    if (headers === r.headers) return r;
    return r.ok ? { ...r, headers } : answer(r.decision, headers);
  }

  function reportRefund(error: unknown): void {
    tell(
      o.logger,
      'error',
      { code: 'PORTCULLIS_REFUND_ERROR', err: error },
      `Portcullis: a refund failed: ${String(error)}`,
    );
  }

  function settle(
    result: RequestResult,
    rawRes: RawResponse,
    req: Req,
    res: Res,
    aborted: boolean,
  ): void {
    const record = spent.get(result.decision);
    if (record === undefined) return;
    spent.delete(result.decision);
    const refund = (successful: boolean) => {
      if (successful ? !skipSuccessful : !skipFailed) return;
      // A reset since the spend took the units with it: what the window holds now is newer.
      if (record.limiter.store.deletions !== record.deletions) return;
      const out = record.limiter.refund(
        record.key,
        record.cost,
        clock.now() - record.at,
        record.made,
      );
      if (isPromise(out)) out.then(undefined, reportRefund);
    };
    // An aborted request (the client left before the response ended) counts as failed.
    if (aborted) refund(false);
    else if (wasSuccessful === undefined) refund(rawRes.statusCode < 400);
    else
      callSafely(
        () => {
          const verdict = wasSuccessful(req, res);
          return isPromise(verdict)
            ? verdict.then((v) => refund(v === true))
            : refund(verdict === true);
        },
        [],
        reportRefund,
      );
  }

  function decide(raw: RawRequest, req: Req): MaybePromise<RequestResult> {
    const r = counted(raw, req);
    if (!stacking()) return r;
    return isPromise(r) ? r.then((x) => stacked(raw, x)) : stacked(raw, r);
  }

  return {
    run(raw: RawRequest, req: Req): MaybePromise<RequestResult | undefined> {
      if (skipFn === undefined) return decide(raw, req);
      const skip = skipFn(req);
      if (isPromise(skip)) return skip.then((s) => (s ? undefined : decide(raw, req)));
      return skip ? undefined : decide(raw, req);
    },
    limiter,
    reconfigure: (partial: WindowLimiterReconfig) => limiter.reconfigure(partial),
    tracksOutcome,
    track(result: RequestResult, rawRes: RawResponse, req: Req, res: Res): void {
      if (!tracksOutcome || !result.ok) return;
      // 'finish' when the response went out, 'close' when the connection ended first (an abort);
      // some responses (injected ones) emit only one of them. The first settles, once.
      rawRes.once('finish', () => settle(result, rawRes, req, res, false));
      rawRes.once('close', () => settle(result, rawRes, req, res, !rawRes.writableFinished));
    },
    close(): MaybePromise<void> {
      closeGate();
      if (ownStore !== undefined) return ownStore.close();
      return o.limiter === undefined ? limiter.close() : undefined;
    },
  };
}
