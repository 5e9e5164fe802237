import { safeLogger } from './safe-call.js';
import { type Clock, systemClock, systemTimers, type TimerHandle, type Timers } from './clock.js';
import type { Logger } from './events.js';
import { optionErrorCode, PortcullisConfigError } from './errors.js';
import { func, MAX_TIMER_MS, parseOptions, required, timerDelay, withMethods } from './options.js';

/** What `onRestart` is told. */
export interface RestartEvent {
  /**
   * The reasons of the requests coalesced into this restart, in arrival order: at most
   * {@link MAX_RESTART_REASONS}, each cut to {@link MAX_RESTART_REASON_LENGTH} characters.
   */
  readonly reasons: readonly string[];
  /** How many further reasons arrived while this restart was pending and were not kept. */
  readonly droppedReasons: number;
}

/** Most reasons one pending restart keeps (reasons come off the wire: they must stay bounded). */
export const MAX_RESTART_REASONS = 32;
/** Longest reason kept; longer ones are cut and end with `…`. */
export const MAX_RESTART_REASON_LENGTH = 256;

/** Options of {@link createRestartScheduler}. */
export interface RestartSchedulerOptions {
  /** Performs the restart. Errors (thrown or rejected) are logged, never lost. */
  onRestart: (event: RestartEvent) => void | Promise<void>;
  /** Least time between two restarts, added on top of the requested delay. @default 30_000 */
  cooldownMs?: number;
  /** Delay of a request that names none. @default 2_000 */
  defaultDelayMs?: number;
  /** Requested delays are capped here. @default 60_000 */
  maxDelayMs?: number;
  /** Time source. @default systemClock */
  clock?: Clock;
  /** Timer functions. @default systemTimers (unref'ed) */
  timers?: Timers;
  /** Receives errors from `onRestart` and `pendingWork`, and deferrals that ran out of time. */
  logger?: Logger;
  /**
   * Work in flight (requests, jobs): a due restart waits while this returns a number above 0,
   * asking again every `deferralPollMs`, for at most `deferralTimeoutMs`. A check that throws or
   * returns no number restarts at once (a broken check must not block restarts forever).
   */
  pendingWork?: () => number;
  /** How often a deferred restart asks `pendingWork` again. @default 500 */
  deferralPollMs?: number;
  /**
   * The longest a due restart waits for `pendingWork` to reach 0; then it restarts anyway.
   * 0 never waits. @default 300_000
   */
  deferralTimeoutMs?: number;
}

/** What a restart request was answered. */
export interface RestartAttempt {
  /** True when the request joined a restart already pending (possibly pulling it forward). */
  readonly coalesced: boolean;
  /** Time until the (pending) restart runs. */
  readonly delayMs: number;
  /** Cooldown added because the last restart was less than `cooldownMs` ago. */
  readonly cooldownMsApplied: number;
}

/** Coalesces restart requests and keeps restarts `cooldownMs` apart. Lives as long as its process. */
export interface RestartScheduler {
  /** Asks for a restart; never rejected, only scheduled. Delays are clamped to `[0, maxDelayMs]`. */
  request(options?: { delayMs?: number; reason?: string }): RestartAttempt;
  /**
   * The pending restart, if any; `deferred: true` (only then present) while a due restart waits
   * for `pendingWork`, its `dueInMs` then 0.
   */
  pending():
    | { readonly dueInMs: number; readonly reasons: readonly string[]; readonly deferred?: true }
    | undefined;
  /** When the last restart ran (clock ms), if one has. */
  lastRestartAt(): number | undefined;
  /** Cancels a pending restart and stops the timer. */
  close(): void;
}

const restartSpec = {
  onRestart: func,
  cooldownMs: timerDelay(0),
  defaultDelayMs: timerDelay(0),
  maxDelayMs: timerDelay(0),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
  logger: withMethods<Logger>('warn', 'error'),
  pendingWork: func,
  deferralPollMs: timerDelay(1),
  deferralTimeoutMs: timerDelay(0),
};

/**
 * Creates the restart scheduler (docs/design.md#restart-cooldown): requests coalesce into one pending restart; the
 * cooldown since the last restart is added on top of the requested delay; an earlier request pulls
 * a pending restart forward.
 * @throws {PortcullisConfigError} for a wrong or unknown option (`onRestart` is required)
 */
export function createRestartScheduler(options: RestartSchedulerOptions): RestartScheduler {
  const o = parseOptions(options, restartSpec, 'createRestartScheduler');
  const onRestart = required(
    o.onRestart,
    'onRestart',
    'a function',
    'createRestartScheduler',
  ) as RestartSchedulerOptions['onRestart'];
  const cooldownMs = o.cooldownMs ?? 30_000;
  const defaultDelayMs = o.defaultDelayMs ?? 2_000;
  const maxDelayMs = o.maxDelayMs ?? 60_000;
  const clock = o.clock ?? systemClock;
  const timers = o.timers ?? systemTimers;
  const logger = safeLogger(o.logger);
  const pendingWork = o.pendingWork as (() => number) | undefined;
  const deferralPollMs = o.deferralPollMs ?? 500;
  const deferralTimeoutMs = o.deferralTimeoutMs ?? 300_000;
  // The timer waits delay + cooldown at most: that sum must fit a Node timer, or it fires at once.
  if (maxDelayMs + cooldownMs > MAX_TIMER_MS || defaultDelayMs + cooldownMs > MAX_TIMER_MS) {
    throw new PortcullisConfigError(
      optionErrorCode('maxDelayMs'),
      'maxDelayMs',
      `createRestartScheduler: maxDelayMs (and defaultDelayMs) + cooldownMs must not exceed ${MAX_TIMER_MS} ms, the longest a timer waits`,
    );
  }
  /** The longest any restart can be away: a clock that stepped back must not make it longer. */
  const longestWait = maxDelayMs + cooldownMs;

  let last: number | undefined;
  let timer: TimerHandle | undefined;
  let dueAt = 0;
  let reasons: string[] = [];
  let dropped = 0;
  /** When the due restart started waiting for `pendingWork` (undefined: it is not waiting). */
  let deferredSince: number | undefined;

  function keepReason(reason: string): void {
    if (reasons.length >= MAX_RESTART_REASONS) {
      dropped++;
      return;
    }
    reasons.push(
      reason.length > MAX_RESTART_REASON_LENGTH
        ? `${reason.slice(0, MAX_RESTART_REASON_LENGTH - 1)}…`
        : reason,
    );
  }

  function fail(error: unknown, message = 'Portcullis: restart failed'): void {
    if (logger) logger.error({ err: error }, message);
    else process.emitWarning(`${message}: ${String(error)}`);
  }

  /** The timer of a due restart (or of a deferral's poll) ran: restart, unless work is in flight. */
  function onDue(): void {
    timer = undefined;
    if (pendingWork !== undefined && waitForWork(pendingWork)) return;
    deferredSince = undefined;
    fire();
  }

  /** Asks `check` whether to wait; when so, schedules the next poll and answers true. */
  function waitForWork(check: () => number): boolean {
    const now = clock.now();
    // A clock that stepped back must not stretch the wait beyond deferralTimeoutMs.
    if (deferredSince === undefined || deferredSince > now) deferredSince = now;
    const waited = now - deferredSince;
    if (waited >= deferralTimeoutMs) {
      if (deferralTimeoutMs > 0)
        logger?.warn(
          { code: 'PORTCULLIS_RESTART_DEFERRAL_TIMEOUT', waitedMs: waited },
          `Portcullis: work still in flight after ${waited} ms; restarting anyway (deferralTimeoutMs)`,
        );
      return false;
    }
    let work: unknown;
    try {
      work = check();
    } catch (error) {
      fail(error, 'Portcullis: pendingWork threw; restarting now');
      return false;
    }
    if (typeof work !== 'number' || Number.isNaN(work)) {
      fail(
        new TypeError(`pendingWork must return a number, got ${String(work)}`),
        'Portcullis: pendingWork returned no number; restarting now',
      );
      return false;
    }
    if (work <= 0) return false;
    timer = timers.setTimeout(onDue, Math.min(deferralPollMs, deferralTimeoutMs - waited));
    return true;
  }

  function fire(): void {
    last = clock.now();
    const event = { reasons, droppedReasons: dropped };
    reasons = [];
    dropped = 0;
    try {
      const result = onRestart(event);
      if (result && typeof result.then === 'function') result.then(undefined, fail);
    } catch (error) {
      fail(error);
    }
  }

  function schedule(at: number, now: number): void {
    if (timer !== undefined) timers.clearTimeout(timer);
    dueAt = at;
    timer = timers.setTimeout(onDue, at - now);
  }

  return {
    request(req = {}): RestartAttempt {
      const requested = req.delayMs ?? defaultDelayMs;
      if (typeof requested !== 'number' || Number.isNaN(requested)) {
        throw new TypeError(
          `Portcullis: restart delayMs must be a number, got ${String(requested)}`,
        );
      }
      if (req.reason !== undefined && typeof req.reason !== 'string') {
        throw new TypeError(
          `Portcullis: restart reason must be a string, got ${typeof req.reason}`,
        );
      }
      const delay = Math.min(Math.max(Math.floor(requested), 0), maxDelayMs);
      const now = clock.now();
      // State stamped in the future (the clock stepped back) is clamped to now: the cooldown never
      // grows beyond cooldownMs and a pending restart is never reported further than it can be.
      if (last !== undefined && last > now) last = now;
      if (timer !== undefined && dueAt > now + longestWait) dueAt = now + longestWait;
      const cooldownMsApplied = last === undefined ? 0 : Math.max(0, last + cooldownMs - now);
      const due = now + delay + cooldownMsApplied;
      if (req.reason !== undefined) keepReason(req.reason);
      if (timer !== undefined) {
        // A restart waiting for work in flight is already due: nothing pulls it forward.
        if (due < dueAt && deferredSince === undefined) schedule(due, now);
        return { coalesced: true, delayMs: Math.max(0, dueAt - now), cooldownMsApplied };
      }
      schedule(due, now);
      return { coalesced: false, delayMs: due - now, cooldownMsApplied };
    },
    pending: () => {
      if (timer === undefined) return undefined;
      if (deferredSince !== undefined) return { dueInMs: 0, reasons: [...reasons], deferred: true };
      return {
        dueInMs: Math.min(longestWait, Math.max(0, dueAt - clock.now())),
        reasons: [...reasons],
      };
    },
    lastRestartAt: () => last,
    close(): void {
      if (timer !== undefined) timers.clearTimeout(timer);
      timer = undefined;
      deferredSince = undefined;
      reasons = [];
      dropped = 0;
    },
  };
}
