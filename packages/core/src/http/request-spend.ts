import type { RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import { createHeaderWriter, type HeaderMode } from '../headers.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { checkCost, type WindowLimiter } from '../window-limiter.js';
import type { NetworkAnswer, NetworkWindows } from './network-windows.js';
import { type Policy, unprefixed } from './policies.js';
import { requestResult } from './refusals.js';
import type { RequestResult } from './request-gate.js';
import type { Refunds } from './request-refunds.js';
import type { RequestLimiters } from './request-limiters.js';

/** Spends a counted request's units and answers with its headers. */
export type Spend<Req> = (
  key: string,
  cost: number,
  req: Req,
  raw: RawRequest,
) => MaybePromise<RequestResult>;

/**
 * How a request gate spends: under its one limiter, under the policy of the request, or in the
 * client's IPv6 networks as well. Each path remembers what it spent when outcomes give units back.
 */
export function requestSpender<Req, Res>(
  { limiter, policyOf, networks }: RequestLimiters<Req>,
  refunds: Refunds<Req, Res>,
  mode: HeaderMode,
): Spend<Req> {
  const tracksOutcome = refunds.tracks;
  const result = headersFollowingRule(limiter, mode);

  function spend(key: string, cost: number): MaybePromise<RequestResult> {
    const c = cost === 1 ? 1 : checkCost(cost);
    if (!tracksOutcome) {
      const d = limiter.consume(key, c);
      return isPromise(d) ? d.then(result) : result(d);
    }
    const deletions = limiter.store.deletions;
    const d = limiter.consume(key, c);
    const done = (x: Decision) => {
      refunds.remember(x, x, limiter, key, c, deletions);
      return result(x);
    };
    return isPromise(d) ? d.then(done) : done(d);
  }

  function spendInNetworks(
    n: NetworkWindows,
    key: string,
    cost: number,
    nets: readonly string[],
  ): MaybePromise<RequestResult> {
    const c = cost === 1 ? 1 : checkCost(cost);
    const deletions = tracksOutcome ? limiter.store.deletions : undefined;
    const done = (a: NetworkAnswer): RequestResult => {
      if (a.decision.allowed)
        refunds.remember(a.decision, a.decision, limiter, key, c, deletions, a.spent);
      return requestResult(a.decision, a.headers);
    };
    const own = (d: Decision) => {
      const a = n.spend(d, nets, c);
      return isPromise(a) ? a.then(done) : done(a);
    };
    const d = limiter.consume(key, c);
    return isPromise(d) ? d.then(own) : own(d);
  }

  function spendUnder(p: Policy, key: string, cost: number): MaybePromise<RequestResult> {
    const c = cost === 1 ? 1 : checkCost(cost);
    const deletions = tracksOutcome ? p.limiter.store.deletions : undefined;
    const finish = (d: Decision) => {
      const out = unprefixed(d, p.prefix);
      refunds.remember(out, d, p.limiter, p.prefix + key, c, deletions);
      return requestResult(out, p.writeHeaders(out));
    };
    const d = p.limiter.consume(p.prefix + key, c);
    return isPromise(d) ? d.then(finish) : finish(d);
  }

  return (key, cost, req, raw) => {
    if (networks !== undefined) {
      const nets = networks.keysOf(raw);
      if (nets !== undefined) return spendInNetworks(networks, key, cost, nets);
    }
    if (policyOf === undefined) return spend(key, cost);
    const p = policyOf(req);
    return isPromise(p) ? p.then((q) => spendUnder(q, key, cost)) : spendUnder(p, key, cost);
  };
}

/** A decision's result with the headers of the limiter's rule in force (a reconfigure changes it). */
function headersFollowingRule(
  limiter: WindowLimiter,
  mode: HeaderMode,
): (d: Decision) => RequestResult {
  let writerRule = limiter.rule;
  let writeHeaders = createHeaderWriter({
    windowMs: writerRule.windowMs,
    name: limiter.name,
    mode,
  });
  return (d) => {
    // A reconfigured limiter has a new rule object: advertise its window from now on.
    if (limiter.rule !== writerRule) {
      writerRule = limiter.rule;
      writeHeaders = createHeaderWriter({
        windowMs: writerRule.windowMs,
        name: limiter.name,
        mode,
      });
    }
    return requestResult(d, writeHeaders(d));
  };
}
