// `WindowLimiter.charge`: units spent after the fact, when a request's cost is known only once
// its response ended (docs/design.md#charge-after). Built on the store's own `consume`, so every
// store charges alike without a method of its own.
import type { Decision } from './decision.js';
import { isPromise, type MaybePromise } from './promise.js';
import type { Store, WindowRule } from './store.js';

/**
 * Spends `cost` units of `k` (a store key) under `rule`: all of them when they fit, else what is
 * left, so the window ends at zero (never below: the overshoot is not carried into the next
 * window). Answers the units spent; `0` spends nothing and asks nothing. `cost` is checked by the
 * caller (a non-negative safe integer).
 */
export function chargeTo(
  store: Store,
  k: string,
  rule: WindowRule,
  cost: number,
): MaybePromise<number> {
  if (cost === 0) return 0;
  const rest = (d: Decision): MaybePromise<number> => {
    if (d.allowed) return cost;
    // Only a window that refused for want of units has some to take; an overflow or a store
    // error has none.
    if (d.reason !== 'limited' || d.remaining < 1) return 0;
    const left = d.remaining;
    const last = store.consume(k, rule, left);
    // Another request may take the rest in between: then nothing more is spent.
    return isPromise(last) ? last.then((r) => (r.allowed ? left : 0)) : last.allowed ? left : 0;
  };
  const first = store.consume(k, rule, cost);
  return isPromise(first) ? first.then(rest) : rest(first);
}
