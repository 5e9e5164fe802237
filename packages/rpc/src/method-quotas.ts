import {
  type Clock,
  createWindowLimiter,
  type Decision,
  isPromise,
  type Logger,
  type MaybePromise,
  methodRateLimitedError,
  PortcullisConfigError,
  parseOptions,
  type Store,
  storeUnavailableError,
  type Timers,
  type WindowLimiter,
} from '@portcullis/core';
import { MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import { contextIdentity, type MethodIdentity, methodQuotaKey } from './identity.js';
import { compileMethodPatterns, methodList } from './patterns.js';
import type { Dispatcher, Wrapped } from './types.js';
import { boolean, checkDispatch, func, integer, nonEmptyString, withMethods } from './validate.js';

/**
 * The control-plane write methods the gateway limits (DESIGN 3.5), the default of
 * `withMethodQuotas`' `methods`. Frozen.
 */
export const controlPlaneWriteMethods = Object.freeze([
  'config.apply',
  'config.patch',
  'plugins.install',
  'plugins.setEnabled',
  'plugins.uninstall',
  'update.run',
  'worktrees.*',
  'gateway.restart.request',
] as const);

/** What `onLimited` is told about a refused (or, in dry-run mode, would-be refused) call. */
export interface MethodLimitedEvent<Params = unknown, Ctx = unknown> {
  /** The method called. */
  readonly method: string;
  /** Its params. */
  readonly params: Params;
  /** The caller's context. */
  readonly ctx: Ctx;
  /** The bucket key (`method|deviceId|clientIp`…). */
  readonly key: string;
  /** The limiter's decision (`allowed: true, dryRun: true` in dry-run mode). */
  readonly decision: Decision;
  /** The error that is (or, in dry-run mode, would have been) thrown. */
  readonly error: PortcullisRpcError;
  /** True when the call goes ahead because the wrapper is in dry-run mode. */
  readonly dryRun: boolean;
}

/** Options of {@link withMethodQuotas}. All optional. */
export interface MethodQuotaOptions<Params = unknown, Ctx = unknown> {
  /**
   * Methods to limit: exact names and `namespace.*` patterns. Each matching method has its own
   * bucket (`worktrees.create` and `worktrees.remove` do not share one).
   * @default controlPlaneWriteMethods
   */
  methods?: readonly string[];
  /** Calls per window, per method, per caller. @default 30 */
  limit?: number;
  /** Window length in ms; the window is anchored at the bucket's first call. @default 60_000 */
  windowMs?: number;
  /**
   * Who is calling. Called only for limited methods.
   * @default reads `ctx.deviceId`, `ctx.clientIp` and `ctx.connId`
   */
  identity?: (ctx: Ctx) => MethodIdentity | undefined;
  /** Where counters live (e.g. a `RedisStore`). @default a new MemoryStore */
  store?: Store;
  /** Most buckets in the built-in memory store (not with `store`). @default 10_000 */
  maxEntries?: number;
  /** Time source of the built-in memory store. @default systemClock */
  clock?: Clock;
  /** Timers of the built-in memory store's sweep. @default systemTimers (unref'ed) */
  timers?: Timers;
  /** Count and report as usual, but never refuse. @default false */
  dryRun?: boolean;
  /** Told about every refusal (and would-be refusal in dry-run mode); its return value is ignored. */
  onLimited?: (event: MethodLimitedEvent<Params, Ctx>) => void;
  /** Warned once if the bucket table, full of blocked buckets, refuses a new caller. */
  logger?: Logger;
  /** Names the limiter in diagnostics events; namespaces its keys in a shared store. @default 'control-plane' */
  name?: string;
}

/** A dispatcher wrapped by {@link withMethodQuotas}, plus a few handles on its limiter. */
export interface MethodQuotaDispatcher<Params = unknown, Ctx = unknown, Result = unknown> {
  /**
   * Dispatches the call, first spending one slot of its bucket when the method is limited. Throws
   * {@link MethodRateLimitedError} (synchronously with the memory store) when the bucket is
   * exhausted, without calling the inner dispatcher.
   */
  (method: string, params: Params, ctx: Ctx): Wrapped<Result>;
  /** Whether `method` is limited. */
  matches(method: string): boolean;
  /** The bucket key a call of `method` from `ctx` is counted under. */
  keyOf(method: string, ctx: Ctx): string;
  /** The underlying window limiter (`peek`, `reset`, `size`). */
  readonly limiter: WindowLimiter;
  /** Stops the built-in store's sweep timer. */
  close(): MaybePromise<void>;
}

const WHERE = 'withMethodQuotas';

/** Reasons a dry-run decision reports for a call that would have been refused. */
const WOULD_REFUSE: ReadonlySet<string> = new Set(['limited', 'overflow', 'store-error']);

const quotaSpec = {
  methods: methodList,
  limit: integer(1),
  windowMs: integer(1),
  identity: func<(ctx: unknown) => MethodIdentity | undefined>(),
  store: withMethods<Store>('consume', 'peek', 'delete'),
  maxEntries: integer(1),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
  dryRun: boolean,
  onLimited: func<(event: MethodLimitedEvent) => void>(),
  logger: withMethods<Logger>('warn', 'error'),
  name: nonEmptyString,
};

/**
 * Wraps an RPC dispatcher with per-method quotas (DESIGN 3.5): each call of a limited method
 * spends one slot of the fixed-window bucket `method|deviceId|clientIp` (30 per 60 s by default,
 * anchored at the first call; a refused call spends nothing). An exhausted bucket makes the call
 * throw {@link MethodRateLimitedError} and the inner dispatcher is not called. Other methods go
 * straight to the dispatcher, free and synchronously.
 * @param dispatch the dispatcher to protect
 * @param options see {@link MethodQuotaOptions}
 * @throws {PortcullisConfigError} for a wrong or unknown option (`ERR_PORTCULLIS_*`)
 * @example
 * const guarded = withMethodQuotas(dispatch, { identity: (conn) => ({ deviceId: conn.deviceId, clientIp: conn.ip }) });
 * await guarded('config.patch', { raw: '…' }, conn); // throws MethodRateLimitedError on the 31st call in a minute
 */
export function withMethodQuotas<Params, Ctx, Result>(
  dispatch: Dispatcher<Params, Ctx, Result>,
  options?: MethodQuotaOptions<Params, Ctx>,
): MethodQuotaDispatcher<Params, Ctx, Result> {
  checkDispatch(dispatch, WHERE);
  const o = parseOptions(options, quotaSpec, WHERE);
  if (o.store !== undefined && o.maxEntries !== undefined) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_MAX_ENTRIES',
      'maxEntries',
      `${WHERE}: maxEntries sizes the built-in store; set it on the store you pass instead`,
    );
  }
  const limit = o.limit ?? 30;
  const windowMs = o.windowMs ?? 60_000;
  const quota = { limit, windowMs };
  const matches = compileMethodPatterns(o.methods ?? controlPlaneWriteMethods);
  const identity = (o.identity ?? contextIdentity) as (ctx: Ctx) => MethodIdentity | undefined;
  const onLimited = o.onLimited as MethodQuotaOptions<Params, Ctx>['onLimited'];
  const limiter = createWindowLimiter({
    algorithm: 'fixed-window',
    limit,
    windowMs,
    name: o.name ?? 'control-plane',
    ...(o.store !== undefined && { store: o.store }),
    ...(o.maxEntries !== undefined && { maxEntries: o.maxEntries }),
    ...(o.clock !== undefined && { clock: o.clock }),
    ...(o.timers !== undefined && { timers: o.timers }),
    ...(o.dryRun !== undefined && { dryRun: o.dryRun }),
    ...(o.logger !== undefined && { logger: o.logger }),
  });

  function refusal(method: string, key: string, d: Decision): PortcullisRpcError {
    if (d.reason === 'store-error') return new PortcullisRpcError(storeUnavailableError());
    // A dry-run decision reports retryAfterMs 0; what the caller would have waited is resetMs.
    const retryAfterMs = d.dryRun === true ? d.resetMs : d.retryAfterMs;
    return new MethodRateLimitedError(methodRateLimitedError(method, retryAfterMs, quota), key, d);
  }

  function settle(method: string, params: Params, ctx: Ctx, key: string, d: Decision): Result {
    const dryRun = d.allowed && d.dryRun === true && WOULD_REFUSE.has(d.reason);
    if (d.allowed && !dryRun) return dispatch(method, params, ctx);
    const error = refusal(method, key, d);
    if (onLimited) onLimited({ method, params, ctx, key, decision: d, error, dryRun });
    if (dryRun) return dispatch(method, params, ctx);
    throw error;
  }

  function keyOf(method: string, ctx: Ctx): string {
    return methodQuotaKey(method, identity(ctx));
  }

  const guarded = function methodQuotaDispatch(
    method: string,
    params: Params,
    ctx: Ctx,
  ): Wrapped<Result> {
    if (typeof method !== 'string' || !matches(method)) return dispatch(method, params, ctx);
    const key = keyOf(method, ctx);
    const d = limiter.consume(key);
    if (isPromise(d)) {
      return d.then((r) => settle(method, params, ctx, key, r)) as Promise<Awaited<Result>>;
    }
    return settle(method, params, ctx, key, d);
  };

  return Object.assign(guarded, {
    matches: (method: string) => typeof method === 'string' && matches(method),
    keyOf,
    limiter,
    close: () => limiter.close(),
  });
}
