import {
  PortcullisConfigError,
  type RestartAttempt,
  type RestartScheduler,
} from '@portcullis/core';
import { parseOptions } from '@portcullis/core/adapter';
import { PortcullisRpcError } from './errors.js';
import { checkMethod, isControl } from './method-name.js';
import type { Dispatcher, Wrapped } from './types.js';
import { checkDispatch, integer, nonEmptyString, withMethods } from './validate.js';

/** The params of `gateway.restart.request` (all optional). */
export interface RestartRequestParams {
  /** Requested delay before the restart; clamped by the scheduler to `[0, maxDelayMs]`. */
  readonly delayMs?: number;
  /**
   * Why, reported to `onRestart`: cut to `maxReasonLength` characters, control characters turned
   * into spaces, and only the first `maxReasons` distinct reasons of a pending restart are kept.
   */
  readonly reason?: string;
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

/** The reasons this wrapper passed on for one restart, and how many it dropped. */
export interface RestartReasons {
  /** The distinct reasons passed to the scheduler, in arrival order (bounded, marker excluded). */
  readonly reasons: readonly string[];
  /** How many requests' new reasons were dropped because `maxReasons` were already kept. */
  readonly dropped: number;
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

/** The reason passed to the scheduler, once per pending restart, when reasons start being dropped. */
export const DROPPED_REASONS_MARKER = '(further restart reasons dropped)';

const WHERE = 'withRestartRequests';

const restartSpec = {
  scheduler: withMethods<RestartScheduler>('request'),
  method: nonEmptyString,
  maxReasonLength: integer(1, 65_536),
  maxReasons: integer(1, 10_000),
};

function invalid(method: string, problem: string): PortcullisRpcError {
  return new PortcullisRpcError({
    code: 'INVALID_REQUEST',
    message: `invalid ${method} params: ${problem}`,
    retryable: false,
  });
}

/** Reads untrusted wire params into a scheduler request, or throws an `INVALID_REQUEST` error. */
function restartParams(method: string, params: unknown): { delayMs?: number; reason?: string } {
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
 * A reason as it is kept: at most `max` code units (a cut one ends in `…`, never in half a surrogate
 * pair), control characters and line separators turned into spaces. Built character by character,
 * so the result is a fresh string that does not keep the (possibly huge) wire string alive.
 */
export function boundReason(reason: string, max: number): string {
  const cut = reason.length > max;
  let end = cut ? max - 1 : reason.length;
  const last = reason.charCodeAt(end - 1);
  if (cut && end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
  const out: string[] = [];
  for (let i = 0; i < end; i++) {
    const code = reason.charCodeAt(i);
    out.push(isControl(code) ? ' ' : String.fromCharCode(code));
  }
  if (cut) out.push('…');
  return out.join('');
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
  checkDispatch(dispatch, WHERE);
  const o = parseOptions(options, restartSpec, WHERE);
  if (o.scheduler === undefined) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_SCHEDULER',
      'scheduler',
      `${WHERE}: option "scheduler" is required (a restart scheduler from createRestartScheduler)`,
    );
  }
  const scheduler: RestartScheduler = o.scheduler;
  const restartMethod = o.method ?? 'gateway.restart.request';
  const maxReasonLength = o.maxReasonLength ?? 256;
  const maxReasons = o.maxReasons ?? 16;

  // The reasons of the current cycle (one pending restart), as passed to the scheduler. Core's
  // scheduler stores every reason it is given until the restart runs: bounding them is done here.
  let kept = new Set<string>();
  let dropped = 0;
  const lastRestartAt = () =>
    typeof scheduler.lastRestartAt === 'function' ? scheduler.lastRestartAt() : undefined;
  let lastRestart = lastRestartAt();

  /** Whether the scheduler has no restart pending, or ran one since the last request. */
  function cycleEnded(): boolean {
    const last = lastRestartAt();
    const ran = last !== lastRestart;
    lastRestart = last;
    return ran || (typeof scheduler.pending === 'function' && scheduler.pending() === undefined);
  }

  function request(method: string, params: unknown): RestartAttempt {
    const { delayMs, reason: raw } = restartParams(method, params);
    if (cycleEnded()) {
      kept = new Set();
      dropped = 0;
    }
    const reason = raw === undefined ? undefined : boundReason(raw, maxReasonLength);
    // 'keep': a new reason with room left; 'drop': a new reason past maxReasons; else a repeat.
    const fate =
      reason === undefined || kept.has(reason)
        ? 'repeat'
        : kept.size < maxReasons
          ? 'keep'
          : 'drop';
    const forward =
      fate === 'keep'
        ? reason
        : fate === 'drop' && dropped === 0
          ? DROPPED_REASONS_MARKER
          : undefined;
    const answer = scheduler.request({
      ...(delayMs !== undefined && { delayMs }),
      ...(forward !== undefined && { reason: forward }),
    });
    if (answer.coalesced === false) {
      // This request opened the pending restart. (Already known from pending() with core's
      // scheduler; a scheduler without it shows the new cycle only now.)
      kept = new Set();
      dropped = 0;
    }
    if (fate === 'keep') kept.add(reason as string);
    else if (fate === 'drop') dropped++;
    return answer;
  }

  const guarded = async function restartRequestDispatch(
    method: string,
    params: Params,
    ctx: Ctx,
  ): Promise<Awaited<Result> | RestartAttempt> {
    checkMethod(method);
    if (method !== restartMethod) return dispatch(method, params, ctx) as Awaited<Result>;
    return request(method, params);
  };

  return Object.assign(guarded, {
    reasons: (): RestartReasons => ({ reasons: [...kept], dropped }),
  });
}
