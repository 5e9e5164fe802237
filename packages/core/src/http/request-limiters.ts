import { checkNetworksWider, ipv6NetworksOption } from '../ipv6-networks.js';
import { PortcullisConfigError } from '../errors.js';
import { NetworkWindows } from './network-windows.js';
import type { Logger } from '../events.js';
import { MemoryStore } from '../memory-store.js';
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
import type { Warnings } from '../warnings.js';
import { createWindowLimiter, type WindowLimiter, windowLimiterSpec } from '../window-limiter.js';
import { withoutUndefined } from '../without-undefined.js';
import { type AdapterOptionSpec, clientOptionSpec } from './gate-options.js';
import { requestKeySpec } from './request-keys.js';
import { accessSpec } from './access-gate.js';
import type { HeaderMode } from '../headers.js';
import { createPolicies, type PerRequest, type Policy } from './policies.js';
import type { MaybePromise } from '../promise.js';

const fn = func as (value: unknown, fail: (expected: string) => never) => never;

/** Every option a request gate takes, beside the adapter's own. */
const requestGateSpec = {
  ...windowLimiterSpec,
  limit: either(integer(1), func, 'a positive integer or a function'),
  windowMs: either(duration(1), func, 'a positive integer (ms) or a function'),
  ...requestKeySpec,
  cost: either(integer(1), func, 'a positive integer or a function'),
  headers: oneOf<boolean | 'ietf' | 'legacy'>([true, false, 'ietf', 'legacy']),
  limiter: withMethods<WindowLimiter>('consume', 'peek', 'reset', 'refund', 'reconfigure'),
  ipv6Networks: ipv6NetworksOption,
  skipSuccessfulRequests: boolean,
  skipFailedRequests: boolean,
  requestWasSuccessful: fn,
  chargeAfter: fn,
  ...accessSpec,
  ...clientOptionSpec,
};

/** The options that build a limiter, refused beside a given `limiter`. */
const LIMITER_OPTIONS = [
  'limit',
  'windowMs',
  'algorithm',
  'store',
  'maxEntries',
  'clock',
  'timers',
  'dryRun',
  'name',
];

/** A request gate's options, checked. */
export type ParsedRequestOptions = ReturnType<typeof parseRequestOptions>;

/** @throws {PortcullisConfigError} for a wrong or unknown option, or limiter options beside `limiter` */
export function parseRequestOptions(options: unknown, extra: AdapterOptionSpec, where: string) {
  const o = parseOptions(options, { ...extra, ...requestGateSpec }, where);
  exclusiveLimiter(o, LIMITER_OPTIONS, where);
  if (
    o.chargeAfter !== undefined &&
    o.limiter !== undefined &&
    typeof o.limiter.charge !== 'function'
  )
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_LIMITER',
      'limiter',
      `${where}: "chargeAfter" spends through the limiter's charge(key, cost), which the "limiter" given lacks (a createWindowLimiter has it)`,
    );
  return o;
}

/** The limiters of a request gate: the one of the fixed numbers, and the per-request policies. */
export interface RequestLimiters<Req> {
  /** The limiter of the default numbers (given, or built from the options). */
  readonly limiter: WindowLimiter;
  /** The policy of a request, when `limit` or `windowMs` depends on it. */
  readonly policyOf: ((req: Req) => MaybePromise<Policy>) | undefined;
  /** The store the gate built for its policies (closed with the gate). */
  readonly ownStore: MemoryStore | undefined;
  /** The IPv6 network budgets, when `ipv6Networks` is on. */
  readonly networks: NetworkWindows | undefined;
}

/** The gate's limiters. Per-request policies share one store; the gate builds it when none is given. */
export function requestLimiters<Req>(
  o: ParsedRequestOptions,
  mode: HeaderMode,
): RequestLimiters<Req> {
  const limitOpt = o.limit as PerRequest<Req, number> | undefined;
  const windowOpt = o.windowMs as PerRequest<Req, number> | undefined;
  const perRequest = typeof limitOpt === 'function' || typeof windowOpt === 'function';
  const nets =
    o.ipv6Networks === undefined || o.ipv6Networks === false ? undefined : o.ipv6Networks;
  if (nets !== undefined) {
    checkNetworksWider(nets, (o.ipv6Subnet ?? 64) as number | false, 'rateLimit');
    // A network's budget is a multiple of one client's: there is no one client budget to multiply
    // when each request names its own.
    if (perRequest)
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_IPV6_NETWORKS',
        'ipv6Networks',
        'rateLimit: "ipv6Networks" needs a fixed "limit" and "windowMs" (not functions of the request)',
      );
  }
  const storeOptions = withoutUndefined({
    maxEntries: o.maxEntries,
    clock: o.clock,
    timers: o.timers,
  });
  const ownStore = perRequest && o.store === undefined ? new MemoryStore(storeOptions) : undefined;
  const limiterOptions = {
    ...withoutUndefined({
      algorithm: o.algorithm,
      dryRun: o.dryRun,
      name: o.name,
      logger: o.logger as Logger | undefined,
      warnings: o.warnings as Warnings | undefined,
    }),
    ...(ownStore !== undefined
      ? { store: ownStore }
      : { ...withoutUndefined({ store: o.store }), ...storeOptions }),
  };
  const limiter =
    o.limiter ??
    createWindowLimiter({
      ...(typeof limitOpt === 'number' && { limit: limitOpt }),
      ...(typeof windowOpt === 'number' && { windowMs: windowOpt }),
      ...limiterOptions,
    });
  const policyOf = perRequest
    ? createPolicies<Req>(
        limitOpt ?? limiter.rule.limit,
        windowOpt ?? limiter.rule.windowMs,
        { ...limiterOptions, name: o.name ?? 'default' },
        mode,
      )
    : undefined;
  const networks = nets === undefined ? undefined : new NetworkWindows(limiter, nets, o, mode);
  return { limiter, policyOf, ownStore, networks };
}
