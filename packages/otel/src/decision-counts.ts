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
  /** Makes `limiter`'s series of `outcome` (not a dry run) exist from now on, at 0. */
  declare(limiter: string, outcome: DecisionReason): void;
}

/** Per limiter, one count per reason and dry-run flag: nothing allocated per decision. */
export function decisionCounts(): DecisionCounts {
  const counts = new Map<string, (Count | undefined)[]>();

  /** The count of `name`'s `reason` (and dry-run flag), created at 0 the first time. */
  function countOf(name: string, reason: DecisionReason, index: number, dryRun: boolean): Count {
    let row = counts.get(name);
    if (row === undefined) {
      row = [];
      counts.set(name, row);
    }
    const at = index * 2 + (dryRun ? 1 : 0);
    let count = row[at];
    if (count === undefined) {
      count = {
        attributes: Object.freeze({
          'portcullis.limiter': name,
          'portcullis.outcome': reason,
          'portcullis.dry_run': dryRun,
        }),
        value: 0,
      };
      row[at] = count;
    }
    return count;
  }

  function onDecision(message: unknown): void {
    const { limiter, decision } = message as PortcullisEvent;
    // A reason from no Portcullis release (another publisher on the channel) is not recorded.
    const index = REASON_INDEX.get(decision?.reason);
    if (index === undefined) return;
    countOf(nameOf(limiter), decision.reason, index, decision.dryRun === true).value++;
  }

  function declare(limiter: string, outcome: DecisionReason): void {
    const index = REASON_INDEX.get(outcome);
    if (index !== undefined) countOf(limiter, outcome, index, false);
  }

  function observeDecisions(result: ObservableResult): void {
    for (const row of counts.values())
      for (const count of row)
        if (count !== undefined) result.observe(count.value, count.attributes);
  }

  return { onDecision, observeDecisions, declare };
}
