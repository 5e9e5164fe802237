import { type Clock, systemClock } from '../clock.js';
import type { Decision } from '../decision.js';
import type { Logger } from '../events.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { callSafely, tell } from '../safe-call.js';
import type { WindowLimiter } from '../window-limiter.js';
import type { NetworkSpend } from './network-windows.js';
import { type ChargeTarget, chargeAfterResponse } from './request-charges.js';
import type { RawResponse, RequestResult } from './request-gate.js';

/** The request gate's options that say which outcomes give a request's units back. */
export interface RefundOptions<Req, Res> {
  readonly skipSuccessfulRequests?: boolean | undefined;
  readonly skipFailedRequests?: boolean | undefined;
  readonly requestWasSuccessful?: ((req: Req, res: Res) => MaybePromise<boolean>) | undefined;
  readonly chargeAfter?: ((req: Req, res: Res) => MaybePromise<number>) | undefined;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
}

interface RefundRule<Req, Res> {
  readonly skipSuccessful: boolean;
  readonly skipFailed: boolean;
  readonly wasSuccessful: ((req: Req, res: Res) => MaybePromise<boolean>) | undefined;
  readonly chargeAfter: ((req: Req, res: Res) => MaybePromise<number>) | undefined;
  readonly clock: Clock;
  readonly logger: Logger | undefined;
}

/** How to give back what an allowed decision spent. */
interface Spent {
  readonly limiter: WindowLimiter;
  readonly key: string;
  readonly cost: number;
  readonly at: number;
  readonly deletions: number | undefined;
  readonly made: Decision;
  /** What the client's IPv6 networks spent for the same request, given back with it. */
  readonly networks: readonly NetworkSpend[] | undefined;
}

/** Whether the store counted the units of an allowed decision ('fallback': the fallback store did). */
function spends(d: Decision): boolean {
  return d.allowed && (d.reason === 'allowed' || d.reason === 'fallback');
}

/**
 * What happens to a request's units once its response ended: the refunds of
 * `skipSuccessfulRequests` / `skipFailedRequests` (units are counted up front, so no race lets
 * extra requests through, and given back once the response says the request should not have
 * counted), and the charge of `chargeAfter` (request-charges.ts).
 */
export class Refunds<Req, Res> {
  readonly #rule: RefundRule<Req, Res>;
  readonly #spent = new WeakMap<Decision, Spent>();
  /** True when some outcome gives units back (else nothing is recorded or watched). */
  readonly tracks: boolean;

  constructor(o: RefundOptions<Req, Res>) {
    this.#rule = {
      skipSuccessful: o.skipSuccessfulRequests ?? false,
      skipFailed: o.skipFailedRequests ?? false,
      wasSuccessful: o.requestWasSuccessful,
      chargeAfter: o.chargeAfter,
      clock: o.clock ?? systemClock,
      logger: o.logger,
    };
    this.tracks =
      this.#rule.skipSuccessful || this.#rule.skipFailed || this.#rule.chargeAfter !== undefined;
  }

  /**
   * Records how to give back what `made` (the limiter's decision; `d` is what the request sees)
   * spent. The refund hands the limiter `made`, so a shared store knows exactly when the units
   * were spent, however late its answer arrived. `deletions` is the store's count of resets
   * before the call: after a reset the units are gone with the state, and are never given back.
   */
  remember(
    d: Decision,
    made: Decision,
    limiter: WindowLimiter,
    key: string,
    cost: number,
    deletions: number | undefined,
    networks?: readonly NetworkSpend[],
  ): void {
    // Only a decision that spent units can give them back: a dry run's would-be refusal (allowed,
    // reason 'limited' or 'overflow') and an 'open' store error counted nothing.
    if (this.tracks && spends(d))
      this.#spent.set(d, {
        limiter,
        key,
        cost,
        at: this.#rule.clock.now(),
        deletions,
        made,
        networks,
      });
  }

  /**
   * Watches an allowed request's response: 'finish' when the response went out, 'close' when the
   * connection ended first (an abort); some responses (injected ones) emit only one of them. The
   * first settles, once.
   */
  track(result: RequestResult, rawRes: RawResponse, req: Req, res: Res): void {
    if (!this.tracks || !result.ok) return;
    rawRes.once('finish', () => this.#settle(result, rawRes, req, res, false));
    rawRes.once('close', () => this.#settle(result, rawRes, req, res, !rawRes.writableFinished));
  }

  #settle(result: RequestResult, rawRes: RawResponse, req: Req, res: Res, aborted: boolean): void {
    const record = this.#spent.get(result.decision);
    if (record === undefined) return;
    this.#spent.delete(result.decision);
    const { skipSuccessful, skipFailed, wasSuccessful, chargeAfter, clock, logger } = this.#rule;
    if (chargeAfter !== undefined)
      chargeAfterResponse(chargeAfter, req, res, targets(record), logger);
    if (!skipSuccessful && !skipFailed) return;
    const reportRefund = (err: unknown): void =>
      tell(
        logger,
        'error',
        { code: 'PORTCULLIS_REFUND_ERROR', err },
        `Portcullis: a refund failed: ${String(err)}`,
      );
    const giveBack = (
      limiter: WindowLimiter,
      key: string,
      made: Decision,
      deletions: number | undefined,
    ) => {
      // A reset since the spend took the units with it: what the window holds now is newer.
      if (limiter.store.deletions !== deletions || !spends(made)) return;
      const out = limiter.refund(key, record.cost, clock.now() - record.at, made);
      if (isPromise(out)) out.then(undefined, reportRefund);
    };
    const refund = (successful: boolean) => {
      if (successful ? !skipSuccessful : !skipFailed) return;
      giveBack(record.limiter, record.key, record.made, record.deletions);
      for (const n of record.networks ?? []) giveBack(n.limiter, n.key, n.made, n.deletions);
    };
    // An aborted request (the client left before the response ended) counts as failed.
    if (aborted) refund(false);
    else if (wasSuccessful === undefined) refund(rawRes.statusCode < 400);
    else
      callSafely(
        () => {
          const verdict = wasSuccessful(req, res);
          return isPromise(verdict)
            ? verdict.then((v) => refund(v === true))
            : refund(verdict === true);
        },
        [],
        reportRefund,
      );
  }
}

/** Every budget a request spent in that still holds its units: its own, then its networks'. */
function targets(record: Spent): ChargeTarget[] {
  const out: ChargeTarget[] = [];
  if (spends(record.made)) out.push(record);
  for (const n of record.networks ?? []) if (spends(n.made)) out.push(n);
  return out;
}
