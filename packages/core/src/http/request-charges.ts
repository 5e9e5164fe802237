// `rateLimit`'s `chargeAfter` (docs/design.md#charge-after): what a request turned out to cost,
// spent once its response ended, in every budget its up-front units went to.
import type { RawRequest } from '../client.js';
import type { Logger } from '../events.js';
import type { RequestLimiters } from './request-limiters.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { callSafely, tell } from '../safe-call.js';
import type { WindowLimiter } from '../window-limiter.js';

/** One budget a request spent in: where its after-the-fact units go too. */
export interface ChargeTarget {
  readonly limiter: WindowLimiter;
  readonly key: string;
  /** The store's count of resets when the request spent: a reset since forgives the charge. */
  readonly deletions: number | undefined;
}

function report(logger: Logger | undefined, err: unknown): void {
  tell(
    logger,
    'error',
    { code: 'PORTCULLIS_CHARGE_ERROR', err },
    `Portcullis: a charge after the response failed: ${String(err)}`,
  );
}

/**
 * Asks `chargeAfter` what the request cost and spends it in each target (see
 * `WindowLimiter.charge`). A throw, a rejection or an answer that is not a non-negative safe
 * integer is logged (`PORTCULLIS_CHARGE_ERROR`) and charges nothing.
 */
export function chargeAfterResponse<Req, Res>(
  chargeAfter: (req: Req, res: Res) => MaybePromise<number>,
  req: Req,
  res: Res,
  targets: readonly ChargeTarget[],
  logger: Logger | undefined,
): void {
  const spend = (units: unknown): void => {
    if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < 0) {
      report(
        logger,
        new RangeError(`chargeAfter must answer a non-negative integer, got ${String(units)}`),
      );
      return;
    }
    if (units === 0) return;
    for (const t of targets) {
      // A reset since the spend forgave the client: nothing is charged to the fresh window.
      if (t.limiter.store.deletions !== t.deletions) continue;
      const out = t.limiter.charge(t.key, units);
      if (isPromise(out)) out.then(undefined, (err: unknown) => report(logger, err));
    }
  };
  callSafely(
    () => {
      const units = chargeAfter(req, res);
      return isPromise(units) ? units.then(spend) : spend(units);
    },
    [],
    (err: unknown) => report(logger, err),
  );
}

/**
 * Spends `units` more of a request's budgets now, where its up-front units went (its own window
 * or its policy's, then each of its IPv6 networks): a handler's `charge(req, units)` (docs/design.md#charge-after).
 * Answers the units spent in the request's own budget (fewer when fewer were left).
 */
export async function chargeRequest<Req>(
  { limiter, policyOf, networks }: RequestLimiters<Req>,
  key: string,
  units: number,
  req: Req,
  raw: RawRequest,
): Promise<number> {
  if (typeof limiter.charge !== 'function')
    throw new TypeError(
      'Portcullis: charge(req, units) spends through the limiter\'s charge(key, cost), which the "limiter" given lacks (a createWindowLimiter has it)',
    );
  const nets = networks?.keysOf(raw);
  if (networks !== undefined && nets !== undefined) {
    const own = await limiter.charge(key, units);
    for (let i = 0; i < nets.length; i++)
      await (networks.limiters[i] as WindowLimiter).charge(nets[i] as string, units);
    return own;
  }
  if (policyOf === undefined) return limiter.charge(key, units);
  const p = await policyOf(req);
  return p.limiter.charge(p.prefix + key, units);
}
