import type { Attributes, ObservableResult } from '@opentelemetry/api';
import type { DecisionReason, PortcullisEvent } from '@portcullis/core';
import { nameOf } from './event-attributes.js';

/** Each decision reason's place in a limiter's row of counts (anything else is not recorded). */
const REASON_INDEX = new Map<unknown, number>(
  (['allowed', 'exempt', 'limited', 'locked', 'overflow', 'fallback', 'store-error'] as const).map(
    (reason: DecisionReason, i) => [reason, i],
  ),
);

/** One series of `portcullis.decisions`: its attributes and its count since `instrument()`. */
interface Count {
  readonly attributes: Attributes;
  value: number;
}

/** The counts behind `portcullis.decisions`: a channel listener and an observable callback. */
export interface DecisionCounts {
  /** Counts one `portcullis:decision` message. */
  onDecision(message: unknown): void;
  /** Reports every count to a collecting reader. */
  observeDecisions(result: ObservableResult): void;
}

/** Per limiter, one count per reason and dry-run flag: nothing allocated per decision. */
export function decisionCounts(): DecisionCounts {
  const counts = new Map<string, (Count | undefined)[]>();

  function onDecision(message: unknown): void {
    const { limiter, decision } = message as PortcullisEvent;
    // A reason from no Portcullis release (another publisher on the channel) is not recorded.
    const reason = REASON_INDEX.get(decision?.reason);
    if (reason === undefined) return;
    const name = nameOf(limiter);
    let row = counts.get(name);
    if (row === undefined) {
      row = [];
      counts.set(name, row);
    }
    const dryRun = decision.dryRun === true;
    const index = reason * 2 + (dryRun ? 1 : 0);
    const count = row[index];
    if (count !== undefined) {
      count.value++;
      return;
    }
    row[index] = {
      attributes: Object.freeze({
        'portcullis.limiter': name,
        'portcullis.outcome': decision.reason,
        'portcullis.dry_run': dryRun,
      }),
      value: 1,
    };
  }

  function observeDecisions(result: ObservableResult): void {
    for (const row of counts.values())
      for (const count of row)
        if (count !== undefined) result.observe(count.value, count.attributes);
  }

  return { onDecision, observeDecisions };
}
