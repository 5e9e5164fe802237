import {
  type Decision,
  type MaybePromise,
  methodRateLimitedError,
  storeUnavailableError,
  type WindowLimiter,
} from '@portcullis/core';
import { callSafely, isPromise, reportHookError } from '@portcullis/core/adapter';
import { MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import { type Quota, type QuotaSetup, WHERE } from './quota-setup.js';

/** Reasons a dry-run decision reports for a call that would have been refused. */
const WOULD_REFUSE: ReadonlySet<string> = new Set(['limited', 'overflow', 'store-error']);

const HOOK_FAILED = `Portcullis: ${WHERE}: onLimited threw; the call went on without it`;

/** The rejection of a call its bucket (`key`) refused with `d`. */
function refusal(method: string, key: string, d: Decision, q: Quota): PortcullisRpcError {
  if (d.reason === 'store-error') return new PortcullisRpcError(storeUnavailableError());
  // A dry-run decision reports retryAfterMs 0; what the caller would have waited is resetMs.
  const retryAfterMs = d.dryRun === true ? d.resetMs : d.retryAfterMs;
  return new MethodRateLimitedError(methodRateLimitedError(method, retryAfterMs, q), key, d);
}

/** Turns decisions into answers: `undefined` lets the call go ahead, an error is its rejection. */
export interface QuotaJudge<Params, Ctx> {
  /** The answer to `d`, the decision of bucket `key` with numbers `q`; tells `onLimited`. */
  verdict(
    method: string,
    params: Params,
    ctx: Ctx,
    key: string,
    d: Decision,
    q: Quota,
  ): PortcullisRpcError | undefined;
  /**
   * For a `.*`-matched method: whether the caller may open a bucket for it. A method it already
   * has a live bucket for costs nothing here; a new one spends one of `maxPatternMethods`.
   */
  admitPatternMethod(
    pl: WindowLimiter,
    method: string,
    params: Params,
    ctx: Ctx,
    key: string,
    caller: string,
  ): MaybePromise<PortcullisRpcError | undefined>;
}

/** The judge of `withMethodQuotas`' decisions, reporting to `setup.onLimited`. */
export function quotaJudge<Params, Ctx>(setup: QuotaSetup<Params, Ctx>): QuotaJudge<Params, Ctx> {
  const { onLimited, logger, limiter, patternQuota } = setup;
  const hookFailed = (err: unknown) =>
    reportHookError(logger, { hook: 'onLimited', err }, HOOK_FAILED);

  const verdict: QuotaJudge<Params, Ctx>['verdict'] = (method, params, ctx, key, d, q) => {
    const dryRun = d.allowed && d.dryRun === true && WOULD_REFUSE.has(d.reason);
    if (d.allowed && !dryRun) return undefined;
    const error = refusal(method, key, d, q);
    if (onLimited) {
      const event = { method, params, ctx, key, decision: d, error, dryRun };
      callSafely(onLimited, [event], hookFailed);
    }
    return dryRun ? undefined : error;
  };

  const admitPatternMethod: QuotaJudge<Params, Ctx>['admitPatternMethod'] = (
    pl,
    method,
    params,
    ctx,
    key,
    caller,
  ) => {
    const spend = (seen: Decision): MaybePromise<PortcullisRpcError | undefined> => {
      if (seen.reason !== 'overflow' && seen.remaining < seen.limit) return undefined;
      const budgetKey = `*|${caller}`;
      const d = pl.consume(budgetKey);
      const judge = (r: Decision) => verdict(method, params, ctx, budgetKey, r, patternQuota);
      return isPromise(d) ? d.then(judge) : judge(d);
    };
    const seen = limiter.peek(key);
    return isPromise(seen) ? seen.then(spend) : spend(seen);
  };

  return { verdict, admitPatternMethod };
}
