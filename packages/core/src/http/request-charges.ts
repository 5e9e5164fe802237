// `rateLimit`'s `chargeAfter` (docs/design.md#charge-after): what a request turned out to cost,
// spent once its response ended, in every budget its up-front units went to.
import type { Logger } from '../events.js';
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
