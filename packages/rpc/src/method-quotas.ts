import type {
  Clock,
  Decision,
  Logger,
  MaybePromise,
  Store,
  Timers,
  Warnings,
  WindowLimiter,
} from '@portcullis/core';
import { isPromise } from '@portcullis/core/adapter';
import type { MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import { callerKey, joinKey, type MethodIdentity } from './identity.js';
import { checkMethod, methodProblem } from './method-name.js';
import { setUpQuotas } from './quota-setup.js';
import { quotaJudge } from './quota-verdict.js';
import type { Dispatcher, Wrapped } from './types.js';

/**
 * The control-plane write methods the gateway limits (docs/design.md#control-plane-quotas), the default of
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
  /**
   * The bucket key that refused: `method|deviceId|clientIp`…, or `*|deviceId|clientIp`… when the
   * caller's budget of new `.*`-matched methods is spent.
   */
  readonly key: string;
  /** The limiter's decision (`allowed: true, dryRun: true` in dry-run mode). */
  readonly decision: Decision;
  /** The error that is (or, in dry-run mode, would have been) the call's rejection. */
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
   * Who is calling. Called only for limited methods; may return a promise. Throwing (or
   * rejecting) fails the call, uncounted.
   * @default reads `ctx.deviceId`, `ctx.clientIp` and `ctx.connId`
   */
  identity?: (ctx: Ctx) => MaybePromise<MethodIdentity | undefined>;
  /**
   * Prefix length an IPv6 client IP is keyed by (core's `ipKey`): one device rotating addresses
   * inside its /64 keeps one bucket. `false` keys the full address.
   * @default 64
   */
  ipv6Subnet?: number | false;
  /**
   * How many methods matched by a `.*` pattern (not by an exact name) one caller may open a new
   * bucket for per window. Past it, a call of a `.*` method the caller has no bucket for yet is
   * refused, so minting names (`worktrees.junk1`, `worktrees.junk2`, …) cannot fill the bucket
   * table and evict anyone's buckets, the caller's own included.
   * @default 16
   */
  maxPatternMethods?: number;
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
  /**
   * Told about every refusal (and would-be refusal in dry-run mode); its return value is ignored.
   * If it throws or rejects, the error goes to `logger.error` (or a process warning) and the call
   * is answered as if the hook had returned.
   */
  onLimited?: (event: MethodLimitedEvent<Params, Ctx>) => unknown;
  /**
   * Warned once if the bucket table, full of blocked buckets, refuses a new caller; told about
   * errors of `onLimited`. A logger that throws is itself caught (then a process warning).
   */
  logger?: Logger;
  /** Names the limiter in diagnostics events; namespaces its keys in a shared store. @default 'control-plane' */
  name?: string;
  /**
   * Misconfiguration warnings switched off, by code, for the limiters it builds: in practice
   * `{ PORTCULLIS_NAME_CLASH: false }`, for two wrappers that share a store and a name on purpose.
   */
  warnings?: Warnings;
}

/** A dispatcher wrapped by {@link withMethodQuotas}, plus a few handles on its limiter. */
export interface MethodQuotaDispatcher<Params = unknown, Ctx = unknown, Result = unknown> {
  /**
   * Dispatches the call, first spending one slot of its bucket when the method is limited. Always
   * returns a promise. It rejects with {@link MethodRateLimitedError} when the bucket is exhausted,
   * and with an `INVALID_REQUEST` {@link PortcullisRpcError} when `method` is not a usable name
   * (not a string, empty, over 256 characters, control characters), in both cases without calling
   * the inner dispatcher. The inner dispatcher's own errors (thrown or rejected) reject it too.
   */
  (method: string, params: Params, ctx: Ctx): Wrapped<Result>;
  /** Whether `method` is limited (false for anything that is not a usable method name). */
  matches(method: string): boolean;
  /**
   * The bucket key a call of `method` from `ctx` is counted under (a promise of it when `identity`
   * answers with one).
   * @throws {PortcullisRpcError} `INVALID_REQUEST` when `method` is not a usable method name
   */
  keyOf(method: string, ctx: Ctx): MaybePromise<string>;
  /** The underlying window limiter (`peek`, `reset`, `size`). */
  readonly limiter: WindowLimiter;
  /**
   * The limiter of new `.*`-matched buckets per caller (`maxPatternMethods` per window, key
   * `*|deviceId|clientIp`…); `undefined` when `methods` has no `.*` pattern.
   */
  readonly patternLimiter: WindowLimiter | undefined;
  /** Stops the built-in stores' sweep timers. */
  close(): MaybePromise<void>;
}

/**
 * Wraps an RPC dispatcher with per-method quotas (docs/design.md#control-plane-quotas): each call of a limited method
 * spends one slot of the fixed-window bucket `method|deviceId|clientIp` (30 per 60 s by default,
 * anchored at the first call; a refused call spends nothing; an IPv6 client is keyed by its /64).
 * The wrapped dispatcher always returns a promise: an exhausted bucket rejects it with
 * {@link MethodRateLimitedError} and the inner dispatcher is not called; a method name that is not
 * a usable string is rejected with `INVALID_REQUEST`, never dispatched. Other methods go straight to
 * the dispatcher, free.
 * @param dispatch the dispatcher to protect
 * @param options see {@link MethodQuotaOptions}
 * @throws {PortcullisConfigError} for a wrong or unknown option (`ERR_PORTCULLIS_*`)
 * @example
 * const guarded = withMethodQuotas(dispatch, { identity: (conn) => ({ deviceId: conn.deviceId, clientIp: conn.ip }) });
 * await guarded('config.patch', { raw: '…' }, conn); // rejects with MethodRateLimitedError on the 31st call in a minute
 */
export function withMethodQuotas<Params, Ctx, Result>(
  dispatch: Dispatcher<Params, Ctx, Result>,
  options?: MethodQuotaOptions<Params, Ctx>,
): MethodQuotaDispatcher<Params, Ctx, Result> {
  const setup = setUpQuotas(dispatch, options, controlPlaneWriteMethods);
  const { classify, identity, ipv6Subnet, limiter, patternLimiter, quota } = setup;
  const { verdict, admitPatternMethod } = quotaJudge(setup);

  function keyOf(method: string, ctx: Ctx): MaybePromise<string> {
    checkMethod(method);
    const who = identity(ctx);
    return isPromise(who)
      ? who.then((w) => joinKey(method, callerKey(w, ipv6Subnet)))
      : joinKey(method, callerKey(who, ipv6Subnet));
  }

  const guarded: Dispatcher<Params, Ctx, Wrapped<Result>> = async function methodQuotaDispatch(
    method,
    params,
    ctx,
  ): Wrapped<Result> {
    checkMethod(method);
    const match = classify(method);
    if (match === undefined) return dispatch(method, params, ctx) as Awaited<Result>;
    // Synchronous answers (memory store, plain identity) are not awaited: no other call can step
    // in between the count and the dispatch.
    let who = identity(ctx);
    if (isPromise(who)) who = await who;
    const caller = callerKey(who, ipv6Subnet);
    const key = joinKey(method, caller);
    if (match === 'pattern' && patternLimiter !== undefined) {
      let refused = admitPatternMethod(patternLimiter, method, params, ctx, key, caller);
      if (isPromise(refused)) refused = await refused;
      if (refused !== undefined) throw refused;
    }
    let d = limiter.consume(key);
    if (isPromise(d)) d = await d;
    const refused = verdict(method, params, ctx, key, d, quota);
    if (refused !== undefined) throw refused;
    return dispatch(method, params, ctx) as Awaited<Result>;
  };

  function close(): MaybePromise<void> {
    const closing = [limiter.close(), patternLimiter?.close()].filter(isPromise);
    return closing.length === 0 ? undefined : Promise.all(closing).then(() => undefined);
  }

  return Object.assign(guarded, {
    matches: (method: string) =>
      methodProblem(method) === undefined && classify(method) !== undefined,
    keyOf,
    limiter,
    patternLimiter,
    close,
  });
}
