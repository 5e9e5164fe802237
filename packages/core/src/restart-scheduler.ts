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
   * returns no number counts as "unknown", not idle: the restart keeps waiting (the error logged
   * once per wait), still bounded by `deferralTimeoutMs`.
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

/** What a restart request asks for. */
export interface RestartRequest {
  /** Delay before the restart (clamped to `[0, maxDelayMs]`). @default defaultDelayMs */
  delayMs?: number;
  /** Why: kept (bounded) and handed to `onRestart`. */
  reason?: string;
  /** Restart when due without waiting for `pendingWork`. @default false */
  skipDeferral?: boolean;
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
  /**
   * Asks for a restart; never rejected, only scheduled. Delays are clamped to `[0, maxDelayMs]`.
   * `skipDeferral: true` (exactly `true`) makes the pending restart run when due whatever
   * `pendingWork` says, and ends a wait already under way.
   */
  request(options?: RestartRequest): RestartAttempt;
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
  const scheduler = new Scheduler(restartSettings(options));
  return {
    request: (req) => scheduler.request(req),
    pending: () => scheduler.pending(),
    lastRestartAt: () => scheduler.last,
    close: () => scheduler.close(),
  };
}

/** The options of a scheduler, checked and with their defaults. */
interface RestartSettings {
  readonly onRestart: RestartSchedulerOptions['onRestart'];
  readonly cooldownMs: number;
  readonly defaultDelayMs: number;
  readonly maxDelayMs: number;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly logger: Logger | undefined;
  readonly pendingWork: (() => number) | undefined;
  readonly deferralPollMs: number;
  readonly deferralTimeoutMs: number;
}

function restartSettings(options: RestartSchedulerOptions): RestartSettings {
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
  // The timer waits delay + cooldown at most: that sum must fit a Node timer, or it fires at once.
  if (maxDelayMs + cooldownMs > MAX_TIMER_MS || defaultDelayMs + cooldownMs > MAX_TIMER_MS) {
    throw new PortcullisConfigError(
      optionErrorCode('maxDelayMs'),
      'maxDelayMs',
      `createRestartScheduler: maxDelayMs (and defaultDelayMs) + cooldownMs must not exceed ${MAX_TIMER_MS} ms, the longest a timer waits`,
    );
  }
  return {
    onRestart,
    cooldownMs,
    defaultDelayMs,
    maxDelayMs,
    clock: o.clock ?? systemClock,
    timers: o.timers ?? systemTimers,
    logger: safeLogger(o.logger),
    pendingWork: o.pendingWork as (() => number) | undefined,
    deferralPollMs: o.deferralPollMs ?? 500,
    deferralTimeoutMs: o.deferralTimeoutMs ?? 300_000,
  };
}

/** The reasons of one pending restart: bounded in number and length (they come off the wire). */
class Reasons {
  list: string[] = [];
  dropped = 0;

  keep(reason: string): void {
    if (this.list.length >= MAX_RESTART_REASONS) {
      this.dropped++;
      return;
    }
    this.list.push(
      reason.length > MAX_RESTART_REASON_LENGTH
        ? `${reason.slice(0, MAX_RESTART_REASON_LENGTH - 1)}…`
        : reason,
    );
  }

  /** What the restart is told; the next pending restart starts with none. */
  take(): RestartEvent {
    const event = { reasons: this.list, droppedReasons: this.dropped };
    this.clear();
    return event;
  }

  clear(): void {
    this.list = [];
    this.dropped = 0;
  }
}

/** One scheduler's state: the pending restart, its timer, and the last restart. */
class Scheduler {
  readonly #s: RestartSettings;
  /** The longest any restart can be away: a clock that stepped back must not make it longer. */
  readonly #longestWait: number;
  readonly #reasons = new Reasons();
  /** When the last restart ran (clock ms), if one has. */
  last: number | undefined;
  #timer: TimerHandle | undefined;
  #dueAt = 0;
  /** When the due restart started waiting for `pendingWork` (undefined: it is not waiting). */
  #deferredSince: number | undefined;
  /** A request of the pending restart asked it not to wait for work in flight. */
  #skipDeferral = false;
  /** The pending-work check failed during this wait (it is logged once per wait). */
  #checkFailed = false;
  /** The timer's callback, made once. */
  readonly #onDue = () => this.#due();

  constructor(settings: RestartSettings) {
    this.#s = settings;
    this.#longestWait = settings.maxDelayMs + settings.cooldownMs;
  }

  request(req: RestartRequest = {}): RestartAttempt {
    const { cooldownMs, maxDelayMs, clock } = this.#s;
    const requested = req.delayMs ?? this.#s.defaultDelayMs;
    if (typeof requested !== 'number' || Number.isNaN(requested)) {
      throw new TypeError(`Portcullis: restart delayMs must be a number, got ${String(requested)}`);
    }
    if (req.reason !== undefined && typeof req.reason !== 'string') {
      throw new TypeError(`Portcullis: restart reason must be a string, got ${typeof req.reason}`);
    }
    if (req.skipDeferral !== undefined && typeof req.skipDeferral !== 'boolean') {
      throw new TypeError(
        `Portcullis: restart skipDeferral must be a boolean, got ${typeof req.skipDeferral}`,
      );
    }
    const delay = Math.min(Math.max(Math.floor(requested), 0), maxDelayMs);
    const now = clock.now();
    // State stamped in the future (the clock stepped back) is clamped to now: the cooldown never
    // grows beyond cooldownMs and a pending restart is never reported further than it can be.
    if (this.last !== undefined && this.last > now) this.last = now;
    if (this.#timer !== undefined && this.#dueAt > now + this.#longestWait)
      this.#dueAt = now + this.#longestWait;
    const cooldownMsApplied =
      this.last === undefined ? 0 : Math.max(0, this.last + cooldownMs - now);
    const due = now + delay + cooldownMsApplied;
    if (req.reason !== undefined) this.#reasons.keep(req.reason);
    if (req.skipDeferral === true) this.#skipDeferral = true;
    if (this.#timer !== undefined) {
      // A restart waiting for work in flight is already due: nothing pulls it forward, except a
      // request that will not wait, which it then runs after that request's own delay.
      if (this.#deferredSince !== undefined) {
        if (req.skipDeferral === true) {
          this.#deferredSince = undefined;
          this.#schedule(now + delay, now);
        }
      } else if (due < this.#dueAt) this.#schedule(due, now);
      return { coalesced: true, delayMs: Math.max(0, this.#dueAt - now), cooldownMsApplied };
    }
    this.#schedule(due, now);
    return { coalesced: false, delayMs: due - now, cooldownMsApplied };
  }

  pending(): ReturnType<RestartScheduler['pending']> {
    if (this.#timer === undefined) return undefined;
    const reasons = [...this.#reasons.list];
    if (this.#deferredSince !== undefined) return { dueInMs: 0, reasons, deferred: true };
    return {
      dueInMs: Math.min(this.#longestWait, Math.max(0, this.#dueAt - this.#s.clock.now())),
      reasons,
    };
  }

  close(): void {
    if (this.#timer !== undefined) this.#s.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#endWait();
    this.#reasons.clear();
  }

  /** The pending restart ran or went: the next one waits for work again, with a fresh check. */
  #endWait(): void {
    this.#deferredSince = undefined;
    this.#skipDeferral = false;
    this.#checkFailed = false;
  }

  /** The timer of a due restart (or of a deferral's poll) ran: restart, unless work is in flight. */
  #due(): void {
    this.#timer = undefined;
    const { pendingWork } = this.#s;
    if (pendingWork !== undefined && !this.#skipDeferral && this.#waitForWork(pendingWork)) return;
    this.#endWait();
    this.#fire();
  }

  /** Asks `check` whether to wait; when so, schedules the next poll and answers true. */
  #waitForWork(check: () => number): boolean {
    const { clock, deferralTimeoutMs } = this.#s;
    const now = clock.now();
    // A clock that stepped back must not stretch the wait beyond deferralTimeoutMs.
    if (this.#deferredSince === undefined || this.#deferredSince > now) this.#deferredSince = now;
    const waited = now - this.#deferredSince;
    if (waited >= deferralTimeoutMs) {
      if (deferralTimeoutMs > 0)
        this.#s.logger?.warn(
          { code: 'PORTCULLIS_RESTART_DEFERRAL_TIMEOUT', waitedMs: waited },
          `Portcullis: work still in flight after ${waited} ms; restarting anyway (deferralTimeoutMs)`,
        );
      return false;
    }
    const work = this.#workOf(check);
    if (work !== undefined && work <= 0) return false;
    const poll = Math.min(this.#s.deferralPollMs, deferralTimeoutMs - waited);
    this.#timer = this.#s.timers.setTimeout(this.#onDue, poll);
    return true;
  }

  /**
   * What `check` says is in flight; undefined ("unknown": keep waiting) when it throws or says no
   * number. Unknown is not idle: restarting then could cut off the very work the check failed to
   * count. The failure is logged once per wait, not once per poll.
   */
  #workOf(check: () => number): number | undefined {
    let work: unknown;
    try {
      work = check();
    } catch (error) {
      this.#checkFailure(error, 'Portcullis: pendingWork threw; the restart keeps waiting');
      return undefined;
    }
    if (typeof work !== 'number' || Number.isNaN(work)) {
      this.#checkFailure(
        new TypeError(`pendingWork must return a number, got ${String(work)}`),
        'Portcullis: pendingWork returned no number; the restart keeps waiting',
      );
      return undefined;
    }
    return work;
  }

  #checkFailure(error: unknown, message: string): void {
    if (this.#checkFailed) return;
    this.#checkFailed = true;
    this.#fail(error, message);
  }

  #fire(): void {
    this.last = this.#s.clock.now();
    const event = this.#reasons.take();
    try {
      const result = this.#s.onRestart(event);
      if (result && typeof result.then === 'function') result.then(undefined, this.#failed);
    } catch (error) {
      this.#fail(error);
    }
  }

  readonly #failed = (error: unknown) => this.#fail(error);

  #fail(error: unknown, message = 'Portcullis: restart failed'): void {
    const { logger } = this.#s;
    if (logger) logger.error({ err: error }, message);
    else process.emitWarning(`${message}: ${String(error)}`);
  }

  #schedule(at: number, now: number): void {
    const { timers } = this.#s;
    if (this.#timer !== undefined) timers.clearTimeout(this.#timer);
    this.#dueAt = at;
    this.#timer = timers.setTimeout(this.#onDue, at - now);
  }
}
