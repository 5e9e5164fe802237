import {
  PortcullisConfigError,
  parseOptions,
  type RestartAttempt,
  type RestartScheduler,
} from '@portcullis/core';
import { PortcullisRpcError } from './errors.js';
import type { Dispatcher, Wrapped } from './types.js';
import { checkDispatch, nonEmptyString, withMethods } from './validate.js';

/** The params of `gateway.restart.request` (all optional). */
export interface RestartRequestParams {
  /** Requested delay before the restart; clamped by the scheduler to `[0, maxDelayMs]`. */
  readonly delayMs?: number;
  /** Why, reported to `onRestart`. */
  readonly reason?: string;
}

/** Options of {@link withRestartRequests}. */
export interface RestartRequestOptions {
  /** The process's restart scheduler (core `createRestartScheduler`). Required. */
  scheduler: RestartScheduler;
  /** The method answered from the scheduler. @default 'gateway.restart.request' */
  method?: string;
}

const WHERE = 'withRestartRequests';

const restartSpec = {
  scheduler: withMethods<RestartScheduler>('request'),
  method: nonEmptyString,
};

function invalid(method: string, problem: string): PortcullisRpcError {
  return new PortcullisRpcError({
    code: 'INVALID_REQUEST',
    message: `invalid ${method} params: ${problem}`,
    retryable: false,
  });
}

/** Reads untrusted wire params into a scheduler request, or throws an `INVALID_REQUEST` error. */
function restartParams(method: string, params: unknown): RestartRequestParams {
  if (params === undefined || params === null) return {};
  if (typeof params !== 'object' || Array.isArray(params)) {
    throw invalid(method, 'params must be an object');
  }
  const { delayMs, reason } = params as Record<string, unknown>;
  if (delayMs !== undefined && (typeof delayMs !== 'number' || Number.isNaN(delayMs))) {
    throw invalid(method, 'delayMs must be a number');
  }
  if (reason !== undefined && typeof reason !== 'string') {
    throw invalid(method, 'reason must be a string');
  }
  return {
    ...(delayMs !== undefined && { delayMs }),
    ...(reason !== undefined && { reason }),
  };
}

/**
 * Answers `gateway.restart.request` from core's restart scheduler (DESIGN 3.6) and passes every
 * other method to `dispatch`. The answer is the scheduler's `{ coalesced, delayMs,
 * cooldownMsApplied }`: requests coalesce, restarts stay `cooldownMs` apart, a request during the
 * cooldown is scheduled after it, never rejected. Put {@link withMethodQuotas} outside this wrapper
 * so each request costs one control-plane slot (`gateway.restart.request` is in the default set).
 * Params that are not `{ delayMs?: number, reason?: string }` throw a {@link PortcullisRpcError}
 * with an `INVALID_REQUEST` shape (JSON-RPC −32602).
 * @param dispatch the dispatcher for every other method
 * @param options see {@link RestartRequestOptions}
 * @throws {PortcullisConfigError} for a missing scheduler or a wrong option
 * @example withMethodQuotas(withRestartRequests(dispatch, { scheduler }), quotaOptions)
 */
export function withRestartRequests<Params, Ctx, Result>(
  dispatch: Dispatcher<Params, Ctx, Result>,
  options: RestartRequestOptions,
): Dispatcher<Params, Ctx, Wrapped<Result> | RestartAttempt> {
  checkDispatch(dispatch, WHERE);
  const o = parseOptions(options, restartSpec, WHERE);
  const scheduler = o.scheduler;
  if (scheduler === undefined) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_SCHEDULER',
      'scheduler',
      `${WHERE}: option "scheduler" is required (a restart scheduler from createRestartScheduler)`,
    );
  }
  const restartMethod = o.method ?? 'gateway.restart.request';
  return function restartRequestDispatch(method, params, ctx) {
    if (method !== restartMethod) return dispatch(method, params, ctx);
    return scheduler.request(restartParams(method, params));
  };
}
