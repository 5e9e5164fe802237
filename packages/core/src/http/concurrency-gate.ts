import type { RawRequest } from '../client.js';
import {
  type ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  concurrencySpec,
  createConcurrencyLimiter,
  type Lease,
} from '../concurrency-limiter.js';
import type { Decision } from '../decision.js';
import {
  requestRateLimitedError,
  retryAfterSeconds,
  storeUnavailableError,
} from '../error-shapes.js';
import { exclusiveLimiter, parseOptions, required, withMethods } from '../options.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { withoutUndefined } from '../without-undefined.js';
import { type HttpAnswer, jsonAnswer } from './answer.js';
import {
  type AdapterOptionSpec,
  clientOptionSpec,
  type GateClientOptions,
} from './gate-options.js';
import { checkKey, requestAddress, requestKeyer, requestKeySpec } from './request-keys.js';
import { accessCheck, accessFirst, accessSpec, denial } from './access-gate.js';
import type { AccessList } from '../access/access-list.js';

/** Options of {@link createConcurrencyGate} (and of every adapter's `concurrency`). */
export interface ConcurrencyGateOptions<Req>
  extends GateClientOptions,
    Pick<
      ConcurrencyLimiterOptions,
      | 'leaseMs'
      | 'retryAfterMs'
      | 'store'
      | 'clock'
      | 'timers'
      | 'dryRun'
      | 'queue'
      | 'queueTimeoutMs'
      | 'queuePollMs'
    > {
  /** Most requests of one key in flight at once. Required (unless `limiter` is given). */
  max?: number;
  /**
   * The bucket of a request; receives the default key (the trusted-proxy aware client IP, IPv6 by
   * its /64, `unknown` when unresolved) as its second argument.
   * @default the resolved client IP (IPv6 by /64)
   */
  key?: (req: Req, defaultKey: string) => MaybePromise<string>;
  /** Requests for which this returns true take no slot. */
  skip?: (req: Req) => MaybePromise<boolean>;
  /** Namespaces keys in a shared store: 1–64 letters, digits, `_`, `.` or `-`. @default 'default' */
  name?: string;
  /** IPv6 clients are keyed by this prefix by default; `false` = full address. @default 64 */
  ipv6Subnet?: number | false;
  /** An existing concurrency limiter to use instead of building one from the numbers above. */
  limiter?: ConcurrencyLimiter;
  /**
   * Operators' allow and deny rules (docs/design.md#access-lists), matched before a slot is
   * taken: a deny is answered 403 `ACCESS_DENIED` (never `onLimited`), an allow takes no slot.
   */
  access?: AccessList;
  /** The account a request acts for, which account rules of `access` match. */
  account?: (req: Req) => MaybePromise<string | undefined>;
}

/** What the concurrency gate concluded about one request. */
export interface ConcurrencyResult {
  /** Whether the request goes on. */
  readonly ok: boolean;
  /** The limiter's decision (`limit` is `max`, `remaining` the slots left). */
  readonly decision: Decision;
  /** Headers of a refusal (`Retry-After`); none on a request that goes on. */
  readonly headers: Readonly<Record<string, string>>;
  /** The refusal (429, or 503 when the store is down and refuses) when `ok` is false. */
  readonly answer: HttpAnswer | undefined;
  /**
   * Gives the slot back: call it once the response is over (finished, failed or abandoned).
   * Calling it again, or on a refusal, does nothing.
   */
  release(): void;
}

/** A compiled concurrency limit: one per middleware instance. */
export interface ConcurrencyGate<Req> {
  /**
   * Decides one request; `undefined` when `skip` said so. A queued request waits until `signal`
   * aborts (its client left), then is refused.
   */
  run(raw: RawRequest, req: Req, signal?: AbortSignal): MaybePromise<ConcurrencyResult | undefined>;
  /** Whether refused requests may wait (`queue` > 0): the adapter then says when a client leaves. */
  readonly queues: boolean;
  /** The concurrency limiter in use. */
  readonly limiter: ConcurrencyLimiter;
  /** Closes the store the gate built. */
  close(): MaybePromise<void>;
}

// The limiter's own checks for what is handed on to it (its `maxEntries` stays its own).
const { maxEntries: _limiterOnly, ...limiterChecks } = concurrencySpec;

const concurrencyGateSpec = {
  ...limiterChecks,
  ...requestKeySpec,
  limiter: withMethods<ConcurrencyLimiter>('acquire', 'close'),
  ...accessSpec,
  ...clientOptionSpec,
};

const LIMITER_OPTIONS = [
  'max',
  'leaseMs',
  'retryAfterMs',
  'name',
  'store',
  'clock',
  'timers',
  'dryRun',
  'queue',
  'queueTimeoutMs',
  'queuePollMs',
];

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
/** The release of a request that took no slot (a deny). */
const NO_RELEASE = (): void => {};

/**
 * The concurrency limit (docs/design.md#concurrency) for any HTTP framework: a request takes a
 * slot of its key or is refused 429 with `Retry-After`; the adapter releases the slot when the
 * response is over, however it ends.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function createConcurrencyGate<Req>(
  options: ConcurrencyGateOptions<Req>,
  extra: AdapterOptionSpec = {},
): ConcurrencyGate<Req> {
  const where = 'concurrency';
  const o = parseOptions(options, { ...extra, ...concurrencyGateSpec }, where);
  exclusiveLimiter(o, LIMITER_OPTIONS, where);
  const limiter =
    o.limiter ??
    createConcurrencyLimiter(
      withoutUndefined({
        max: required(o.max, 'max', 'an integer ≥ 1', where),
        leaseMs: o.leaseMs,
        retryAfterMs: o.retryAfterMs,
        name: o.name,
        store: o.store,
        clock: o.clock,
        timers: o.timers,
        dryRun: o.dryRun,
        queue: o.queue,
        queueTimeoutMs: o.queueTimeoutMs,
        queuePollMs: o.queuePollMs,
        logger: o.logger,
        warnings: o.warnings,
      }),
    );
  const address = requestAddress(o);
  const defaultKey = requestKeyer(o, address);
  const access = accessCheck<Req>(o, address);
  const keyFn = o.key as ((req: Req, defaultKey: string) => MaybePromise<string>) | undefined;
  const skipFn = o.skip as ((req: Req) => MaybePromise<boolean>) | undefined;

  const take = (key: string, signal?: AbortSignal): MaybePromise<ConcurrencyResult> => {
    const lease = limiter.acquire(checkKey(key), signal);
    return isPromise(lease) ? lease.then(concurrencyResult) : concurrencyResult(lease);
  };

  function decide(
    raw: RawRequest,
    req: Req,
    signal?: AbortSignal,
  ): MaybePromise<ConcurrencyResult> {
    if (keyFn === undefined) return take(defaultKey(raw), signal);
    const key = keyFn(req, defaultKey(raw));
    return isPromise(key) ? key.then((k) => take(k, signal)) : take(key, signal);
  }

  function unskipped(
    raw: RawRequest,
    req: Req,
    signal?: AbortSignal,
  ): MaybePromise<ConcurrencyResult | undefined> {
    if (skipFn === undefined) return decide(raw, req, signal);
    const skip = skipFn(req);
    if (isPromise(skip)) return skip.then((s) => (s ? undefined : decide(raw, req, signal)));
    return skip ? undefined : decide(raw, req, signal);
  }

  const run = accessFirst(
    access,
    `concurrency ${limiter.name}`,
    unskipped,
    (rule, raw, left): ConcurrencyResult => {
      const { decision, answer } = denial(rule, defaultKey(raw), limiter.rule.max, left);
      return { ok: false, decision, headers: answer.headers, answer, release: NO_RELEASE };
    },
  );

  return {
    run,
    queues: limiter.queues === true,
    limiter,
    close: () => (o.limiter === undefined ? limiter.close() : undefined),
  };
}

/** A lease as the gate's result: a refusal is 429 with `Retry-After`, or 503 for a store that failed closed. */
function concurrencyResult(lease: Lease): ConcurrencyResult {
  const d = lease.decision;
  if (d.allowed)
    return {
      ok: true,
      decision: d,
      headers: NO_HEADERS,
      answer: undefined,
      release: lease.release,
    };
  if (d.reason === 'store-error')
    return {
      ok: false,
      decision: d,
      headers: NO_HEADERS,
      answer: jsonAnswer(503, storeUnavailableError()),
      release: lease.release,
    };
  const headers = { 'Retry-After': String(retryAfterSeconds(d.retryAfterMs)) };
  return {
    ok: false,
    decision: d,
    headers,
    answer: jsonAnswer(429, requestRateLimitedError(d.retryAfterMs), headers),
    release: lease.release,
  };
}
