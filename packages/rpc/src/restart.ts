import type { RestartAttempt, RestartRequest, RestartScheduler } from '@portcullis/core';
import {
  integerOption,
  methodsOption,
  nonEmptyStringOption,
  requiredOption,
} from '@portcullis/core/adapter';
import { PortcullisRpcError } from './errors.js';
import { checkMethod } from './method-name.js';
import { boundedRestarts, type RestartReasons } from './restart-reasons.js';
import type { Dispatcher, Wrapped } from './types.js';
import { wrapperOptions } from './wrapper-options.js';

export { boundReason, DROPPED_REASONS_MARKER, type RestartReasons } from './restart-reasons.js';

/** The params of `gateway.restart.request` (all optional). */
export interface RestartRequestParams {
  /** Requested delay before the restart; clamped by the scheduler to `[0, maxDelayMs]`. */
  readonly delayMs?: number;
  /**
   * Why, reported to `onRestart`: cut to `maxReasonLength` characters, control characters turned
   * into spaces, and only the first `maxReasons` distinct reasons of a pending restart are kept.
   */
  readonly reason?: string;
  /**
   * `true` restarts when due whatever work is in flight (the scheduler's `pendingWork` is not
   * waited for). Only the boolean `true` skips: any other value, a truthy string included, is
   * read as `false`, so a loose client cannot bypass the wait by accident.
   */
  readonly skipDeferral?: boolean;
}

/** Options of {@link withRestartRequests}. */
export interface RestartRequestOptions {
  /** The process's restart scheduler (core `createRestartScheduler`). Required. */
  scheduler: RestartScheduler;
  /** The method answered from the scheduler. @default 'gateway.restart.request' */
  method?: string;
  /**
   * Longest reason passed to the scheduler, in UTF-16 code units; a longer one is cut and ends in
   * `…` (the whole is exactly this long). @default 256
   */
  maxReasonLength?: number;
  /**
   * Most distinct reasons passed to the scheduler for one pending restart. Later new reasons are
   * dropped and counted; the first drop adds the marker {@link DROPPED_REASONS_MARKER}. @default 16
   */
  maxReasons?: number;
}

/** A dispatcher wrapped by {@link withRestartRequests}. */
export interface RestartRequestDispatcher<Params = unknown, Ctx = unknown, Result = unknown> {
  /**
   * Answers the restart method from the scheduler and passes every other method to the inner
   * dispatcher. Always returns a promise; bad params and unusable method names reject with an
   * `INVALID_REQUEST` {@link PortcullisRpcError}.
   */
  (method: string, params: Params, ctx: Ctx): Wrapped<Result | RestartAttempt>;
  /**
   * The reasons passed on for the pending restart — or, once it has run and until the next
   * request, for the restart that ran (so `onRestart` can read the drop count).
   */
  reasons(): RestartReasons;
}

const WHERE = 'withRestartRequests';

const restartSpec = {
  scheduler: methodsOption<RestartScheduler>('request'),
  method: nonEmptyStringOption,
  maxReasonLength: integerOption(1, 65_536),
  maxReasons: integerOption(1, 10_000),
};

function invalid(method: string, problem: string): PortcullisRpcError {
  return new PortcullisRpcError({
    code: 'INVALID_REQUEST',
    message: `invalid ${method} params: ${problem}`,
    retryable: false,
  });
}

/** Reads untrusted wire params into a scheduler request, or throws an `INVALID_REQUEST` error. */
function restartParams(method: string, params: unknown): RestartRequest {
  if (params === undefined || params === null) return {};
  if (typeof params !== 'object' || Array.isArray(params)) {
    throw invalid(method, 'params must be an object');
  }
  const { delayMs, reason, skipDeferral } = params as Record<string, unknown>;
  if (delayMs !== undefined && (typeof delayMs !== 'number' || Number.isNaN(delayMs))) {
    throw invalid(method, 'delayMs must be a number');
  }
  if (reason !== undefined && typeof reason !== 'string') {
    throw invalid(method, 'reason must be a string');
  }
  return {
    ...(delayMs !== undefined && { delayMs }),
    ...(reason !== undefined && { reason }),
    ...(skipDeferral === true && { skipDeferral }),
  };
}

/**
 * Answers `gateway.restart.request` from core's restart scheduler (docs/design.md#restart-cooldown) and passes every
 * other method to `dispatch`. The answer is the scheduler's `{ coalesced, delayMs,
 * cooldownMsApplied }`: requests coalesce, restarts stay `cooldownMs` apart, a request during the
 * cooldown is scheduled after it, never rejected. Put {@link withMethodQuotas} outside this wrapper
 * so each request costs one control-plane slot (`gateway.restart.request` is in the default set).
 * Params that are not `{ delayMs?: number, reason?: string }` reject with a
 * {@link PortcullisRpcError} with an `INVALID_REQUEST` shape (JSON-RPC −32602). Reasons are bounded
 * before they reach the scheduler: `maxReasonLength` each, `maxReasons` distinct per pending restart.
 * `skipDeferral: true` (the boolean only) passes on; any other `skipDeferral` is read as false.
 * The wrapped dispatcher always returns a promise.
 * @param dispatch the dispatcher for every other method
 * @param options see {@link RestartRequestOptions}
 * @throws {PortcullisConfigError} for a missing scheduler or a wrong option
 * @example withMethodQuotas(withRestartRequests(dispatch, { scheduler }), quotaOptions)
 */
export function withRestartRequests<Params, Ctx, Result>(
  dispatch: Dispatcher<Params, Ctx, Result>,
  options: RestartRequestOptions,
): RestartRequestDispatcher<Params, Ctx, Result> {
  const o = wrapperOptions(dispatch, options, restartSpec, WHERE);
  const scheduler = requiredOption(
    o.scheduler,
    'scheduler',
    'a restart scheduler from createRestartScheduler',
    WHERE,
  );
  const restartMethod = o.method ?? 'gateway.restart.request';
  const restarts = boundedRestarts(scheduler, o.maxReasonLength ?? 256, o.maxReasons ?? 16);

  const guarded = async function restartRequestDispatch(
    method: string,
    params: Params,
    ctx: Ctx,
  ): Promise<Awaited<Result> | RestartAttempt> {
    checkMethod(method);
    if (method !== restartMethod) return dispatch(method, params, ctx) as Awaited<Result>;
    return restarts.request(restartParams(method, params));
  };

  return Object.assign(guarded, { reasons: restarts.reasons });
}
