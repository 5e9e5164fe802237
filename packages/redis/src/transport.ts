import { type Clock, channels, type TimerHandle, type Timers } from '@portcullis/core';
import { timeStoreCall } from '@portcullis/core/adapter';
import { callTimers, Deadlines, type Pending } from './deadlines.js';
import type { SendCommand } from './options.js';
import { isNoScript, RedisReplyError, RedisTimeoutError } from './replies.js';

/** What a {@link Transport} needs from the store's options. */
export interface TransportOptions {
  readonly send: SendCommand;
  readonly timeoutMs: number;
  /** Injected timers (tests); undefined: the system's, under one shared deadline timer. */
  readonly timers: Timers | undefined;
  /** Times the calls published on `portcullis:store-call`. */
  readonly clock: Clock;
}

const same = <T>(value: T): T => value;
const rethrow = (error: unknown): never => {
  throw error;
};
const anything = (_value: unknown): _value is unknown => true;

/**
 * Every command the store sends goes through here: the one per-call timeout (no call waits longer
 * than `timeoutMs`, a late reply is ignored and never unhandled), the one `NOSCRIPT` retry of a
 * script (`EVALSHA` sent again as `EVAL` with its source, once), the reply check, and the re-stamp
 * barrier that script calls wait behind.
 */
export class Transport {
  readonly #send: SendCommand;
  readonly #timeoutMs: number;
  readonly #timers: Timers;
  readonly #clock: Clock;
  /** With the system timers: the shared deadline of the calls of `timeoutMs` (else undefined). */
  readonly #deadlines: Deadlines | undefined;
  /** While a re-stamp walk runs (bounded): script calls made now wait for it. */
  #barrier: Promise<void> | undefined;

  constructor(o: TransportOptions) {
    this.#send = o.send;
    this.#timeoutMs = o.timeoutMs;
    this.#timers = o.timers ?? callTimers;
    this.#clock = o.clock;
    // Injected timers (fake ones in tests) see one timer per call, exactly as they always did.
    this.#deadlines = o.timers === undefined ? new Deadlines(o.timeoutMs) : undefined;
  }

  /** The store's `timeoutMs`. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** The barrier script calls wait behind now, if a re-stamp walk is running. */
  get barrier(): Promise<void> | undefined {
    return this.#barrier;
  }

  /**
   * Script calls made from now on wait for `walk` to settle, but at most `maxMs` (then they go on:
   * the barrier bounds how stale a key can be, never how long a decision takes).
   */
  hold(walk: Promise<unknown>, maxMs: number): void {
    let timer: unknown;
    const barrier = new Promise<void>((resolve) => {
      timer = this.#timers.setTimeout(resolve, maxMs);
      walk.then(
        () => resolve(),
        () => resolve(),
      );
    }).then(() => {
      this.#timers.clearTimeout(timer as TimerHandle);
      if (this.#barrier === barrier) this.#barrier = undefined;
    });
    this.#barrier = barrier;
  }

  /** Calls `sendCommand` with no deadline, turning a synchronous throw into a rejection. */
  call(args: string[], key: string | undefined): Promise<unknown> {
    try {
      return Promise.resolve(this.#send(args, key));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Races `run` against `ms` (default `timeoutMs`); a reply `valid` refuses rejects with a
   * {@link RedisReplyError}. Whatever settles second is ignored.
   */
  deadline<T>(
    run: (expired: () => boolean) => Promise<unknown>,
    valid: (value: unknown) => value is T = anything as (value: unknown) => value is T,
    ms = this.#timeoutMs,
  ): Promise<T> {
    return this.#timed(this.#within(ms, run, undefined, undefined, valid, same, rethrow));
  }

  /**
   * Runs the script call `args` (`EVALSHA <sha> <n> <key> …`, `source` the script the SHA1 names)
   * within `timeoutMs`, behind the re-stamp barrier when `waits`, and hands its valid reply to
   * `done`, or its error to `failed`, in one promise: the hot path's reply becomes its decision
   * without a promise and closures more per call. While `portcullis:store-call` has subscribers
   * the timed part is the call alone, not `done`.
   */
  script<T, R>(
    args: string[],
    source: string,
    valid: (reply: unknown) => reply is T,
    done: (reply: T) => R | PromiseLike<R>,
    failed: (error: unknown) => R | PromiseLike<R>,
    waits = true,
  ): Promise<R> {
    const after = waits ? this.#barrier : undefined;
    const ms = this.#timeoutMs;
    if (channels.storeCall.hasSubscribers)
      return this.#timed(this.#within(ms, args, source, after, valid, same, rethrow)).then(
        done,
        failed,
      );
    return this.#within(ms, args, source, after, valid, done, failed);
  }

  /** {@link Transport.script} whose promise is the valid reply itself (rejects on a failure). */
  run<T>(
    args: string[],
    source: string,
    valid: (reply: unknown) => reply is T,
    waits = true,
  ): Promise<T> {
    return this.script(args, source, valid, same, rethrow, waits);
  }

  /**
   * The one deadline and the one `NOSCRIPT` retry. `request` is a script call's arguments (then
   * `EVALSHA`, and `EVAL` with `source` once if, and only if, Redis answers `NOSCRIPT` in time;
   * sent once `after` settles) or a function that sends what it likes. The first of the reply,
   * the error and the `ms` timeout settles the call, by `done` (a valid reply) or `failed`; a
   * throw of either rejects. With the system timers every call of `timeoutMs` shares one timer.
   */
  #within<T, R>(
    ms: number,
    request: string[] | ((expired: () => boolean) => Promise<unknown>),
    source: string | undefined,
    after: Promise<void> | undefined,
    valid: (reply: unknown) => reply is T,
    done: (reply: T) => R | PromiseLike<R>,
    failed: (error: unknown) => R | PromiseLike<R>,
  ): Promise<R> {
    const shared = ms === this.#timeoutMs ? this.#deadlines : undefined;
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      let retried = false;
      let pending: Pending | undefined;
      let timer: TimerHandle | undefined;
      const finish = (ok: boolean, value: unknown) => {
        settled = true;
        if (pending !== undefined) (shared as Deadlines).remove(pending);
        else if (timer !== undefined) this.#timers.clearTimeout(timer);
        try {
          if (!ok) resolve(failed(value));
          else if (valid(value)) resolve(done(value));
          else resolve(failed(new RedisReplyError(value)));
        } catch (error) {
          reject(error);
        }
      };
      const expire = () => {
        if (settled) return;
        pending = undefined;
        timer = undefined;
        finish(false, new RedisTimeoutError(ms));
      };
      const replied = (value: unknown) => {
        if (!settled) finish(true, value);
      };
      const rejected = (error: unknown) => {
        if (settled) return;
        if (source !== undefined && !retried && isNoScript(error)) {
          // EVALSHA of a script Redis does not hold: sent once more with its source.
          retried = true;
          const again = (request as string[]).slice();
          again[0] = 'EVAL';
          again[1] = source;
          this.call(again, again[3]).then(replied, rejected);
          return;
        }
        finish(false, error);
      };
      if (shared !== undefined) pending = shared.add(expire);
      else timer = this.#timers.setTimeout(expire, ms);
      if (typeof request === 'function') request(() => settled).then(replied, rejected);
      else if (after === undefined) this.call(request, request[3]).then(replied, rejected);
      // The barrier never rejects (a failed walk ends it too).
      else void after.then(() => this.call(request, request[3]).then(replied, rejected));
    });
  }

  /** `portcullis:store-call` (metrics): timed only while someone listens. */
  #timed<T>(call: Promise<T>): Promise<T> {
    return channels.storeCall.hasSubscribers ? timeStoreCall('redis', this.#clock, call) : call;
  }
}
