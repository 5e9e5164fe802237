import type { RestartAttempt, RestartRequest, RestartScheduler } from '@portcullis/core';
import { isControl } from './method-name.js';

/** The reasons this wrapper passed on for one restart, and how many it dropped. */
export interface RestartReasons {
  /** The distinct reasons passed to the scheduler, in arrival order (bounded, marker excluded). */
  readonly reasons: readonly string[];
  /** How many requests' new reasons were dropped because `maxReasons` were already kept. */
  readonly dropped: number;
}

/** The reason passed to the scheduler, once per pending restart, when reasons start being dropped. */
export const DROPPED_REASONS_MARKER = '(further restart reasons dropped)';

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

/** A scheduler in front of which every reason is bounded, and the reasons it was given. */
export interface BoundedRestarts {
  /** Asks the scheduler for a restart, with the reason bounded (or dropped, or the marker). */
  request(ask: RestartRequest): RestartAttempt;
  /** The reasons passed on for the pending (or the last run) restart. */
  reasons(): RestartReasons;
}

/**
 * Bounds what reaches `scheduler`: core's scheduler stores every reason it is given until the
 * restart runs, so each reason is cut to `maxReasonLength` and only `maxReasons` distinct ones
 * are passed on per pending restart (then the marker once, then nothing).
 */
export function boundedRestarts(
  scheduler: RestartScheduler,
  maxReasonLength: number,
  maxReasons: number,
): BoundedRestarts {
  // The reasons of the current cycle (one pending restart), as passed to the scheduler.
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

  function request({ delayMs, reason: raw, skipDeferral }: RestartRequest) {
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
      ...(skipDeferral === true && { skipDeferral }),
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

  return { request, reasons: () => ({ reasons: [...kept], dropped }) };
}
