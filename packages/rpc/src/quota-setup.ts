import {
  createWindowLimiter,
  type Logger,
  type MaybePromise,
  PortcullisConfigError,
  type WindowLimiter,
} from '@portcullis/core';
import {
  eitherOption,
  functionOption,
  integerOption,
  oneOfOption,
  windowLimiterSpec,
  withoutUndefined,
} from '@portcullis/core/adapter';
import { contextIdentity, type MethodIdentity } from './identity.js';
import type { MethodLimitedEvent, MethodQuotaOptions } from './method-quotas.js';
import { classifyMethods, type Match, methodList } from './patterns.js';
import { wrapperOptions } from './wrapper-options.js';

/** The name `withMethodQuotas` reports its option errors and hook errors under. */
export const WHERE = 'withMethodQuotas';

/** A bucket's numbers, as a refusal's message quotes them. */
export interface Quota {
  readonly limit: number;
  readonly windowMs: number;
}

/** `withMethodQuotas`' options, checked and with their defaults, and the limiters they build. */
export interface QuotaSetup<Params, Ctx> {
  readonly quota: Quota;
  /** The budget of new `.*`-matched buckets per caller. */
  readonly patternQuota: Quota;
  readonly ipv6Subnet: number | false;
  readonly classify: (method: string) => Match;
  readonly identity: (ctx: Ctx) => MaybePromise<MethodIdentity | undefined>;
  readonly onLimited: ((event: MethodLimitedEvent<Params, Ctx>) => unknown) | undefined;
  readonly logger: Logger | undefined;
  readonly limiter: WindowLimiter;
  /** `undefined` when no method pattern ends in `.*`. */
  readonly patternLimiter: WindowLimiter | undefined;
}

// createWindowLimiter's checks for what is handed on to it; rpc counts in fixed windows only.
const { algorithm: _fixedWindowOnly, ...windowOptions } = windowLimiterSpec;

const quotaSpec = {
  ...windowOptions,
  methods: methodList,
  identity: functionOption,
  ipv6Subnet: eitherOption(
    integerOption(1, 128),
    oneOfOption([false]),
    'an integer from 1 to 128 or false',
  ),
  maxPatternMethods: integerOption(1),
  onLimited: functionOption,
};

/**
 * Checks `dispatch` and `options` (every error is a {@link PortcullisConfigError}), applies the
 * defaults and builds the window limiters `withMethodQuotas` counts with.
 */
export function setUpQuotas<Params, Ctx>(
  dispatch: unknown,
  options: MethodQuotaOptions<Params, Ctx> | undefined,
  defaultMethods: readonly string[],
): QuotaSetup<Params, Ctx> {
  const o = wrapperOptions(dispatch, options, quotaSpec, WHERE);
  if (o.store !== undefined && o.maxEntries !== undefined) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_MAX_ENTRIES',
      'maxEntries',
      `${WHERE}: maxEntries sizes the built-in store; set it on the store you pass instead`,
    );
  }
  const windowMs = o.windowMs ?? 60_000;
  const quota = { limit: o.limit ?? 30, windowMs };
  const patternQuota = { limit: o.maxPatternMethods ?? 16, windowMs };
  const methods = o.methods ?? defaultMethods;
  const name = o.name ?? 'control-plane';
  // Core limiters wrap the logger themselves: a throwing logger never breaks a decision.
  const { store, maxEntries, clock, timers, dryRun, logger, warnings } = o;
  /** Store, clock, timers, dry run and logger: the same for both limiters. */
  const shared = {
    algorithm: 'fixed-window' as const,
    windowMs,
    ...withoutUndefined({ store, maxEntries, clock, timers, dryRun, logger, warnings }),
  };
  const limiter = createWindowLimiter({ ...shared, limit: quota.limit, name });
  /*
   * New `.*` buckets per caller. A built-in store of its own (its keys can never meet a method
   * key); in a shared store its namespace `<name>.new-methods:` differs from `<name>:`.
   */
  const patternLimiter = methods.some((m) => m.endsWith('.*'))
    ? createWindowLimiter({ ...shared, limit: patternQuota.limit, name: `${name}.new-methods` })
    : undefined;
  return {
    quota,
    patternQuota,
    ipv6Subnet: (o.ipv6Subnet ?? 64) as number | false,
    classify: classifyMethods(methods),
    identity: (o.identity ?? contextIdentity) as QuotaSetup<Params, Ctx>['identity'],
    onLimited: o.onLimited as QuotaSetup<Params, Ctx>['onLimited'],
    logger,
    limiter,
    patternLimiter,
  };
}
