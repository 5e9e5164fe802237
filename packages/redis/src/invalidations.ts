import type { Logger } from '@portcullis/core';
import { type Subscribe, type Unsubscribe, WHERE } from './options.js';
import type { Shared } from './shared.js';

/**
 * Marks an invalidation published by a refund that reopened a window (the key follows), apart from
 * a reset's (the key alone): only a reset cancels the refunds of spends made before it. A process
 * of an older version reads the marked message as a key that does not exist, and its local refusal
 * ends within `localDeny.maxStaleMs`, as when a message is lost.
 */
const REOPENED = '\u0001reopened:';
/** Marks a reset of a key that itself starts like a marked message (any other goes as it is). */
const RESET = '\u0001reset:';

/** What the store does with an invalidation heard from another process. */
export interface Heard {
  /** A reset or a reopening: forget what this process holds for `key`. */
  invalidate(key: string): void;
  /** A reset (after `invalidate`): it cancels refunds, and may undo a write-back of this one. */
  reset(key: string): void;
}

function settle(value: unknown): void {
  if (value !== null && typeof (value as Promise<unknown>)?.then === 'function')
    (value as Promise<unknown>).then(undefined, () => {});
}

/**
 * The invalidation channel (`<prefix>deny-invalidations`): resets and reopening refunds are
 * published there, and, with `subscribe`, heard from every other process, so that none keeps a
 * local refusal or a seen lockout that Redis no longer holds.
 */
export class Invalidations {
  readonly #channel: string;
  #unsubscribe: Unsubscribe | undefined;
  /**
   * Whether resets made elsewhere reach this process (`subscribe` given and not failed): only then
   * are lockouts seen in Redis written back, since a write-back must never undo such a reset.
   */
  #subscribed = false;

  constructor(
    private readonly s: Shared,
    private readonly logger: Logger | undefined,
  ) {
    this.#channel = `${s.prefix}deny-invalidations`;
  }

  /** See {@link Invalidations.#subscribed}. */
  get subscribed(): boolean {
    return this.#subscribed;
  }

  /** Calls `subscribe` once; a failure to subscribe is logged (entries stay bounded by maxStaleMs). */
  subscribe(subscribe: Subscribe, heard: Heard): void {
    const onMessage = (message: unknown) => {
      const text = String(message);
      if (text.startsWith(REOPENED)) {
        heard.invalidate(text.slice(REOPENED.length));
      } else {
        const key = text.startsWith(RESET) ? text.slice(RESET.length) : text;
        heard.invalidate(key);
        heard.reset(key);
      }
    };
    this.#subscribed = true;
    const failed = (error: unknown) => {
      this.#subscribed = false;
      const text = error instanceof Error ? error.message : String(error);
      this.logger?.warn(
        { code: 'PORTCULLIS_SUBSCRIBE_FAILED', store: WHERE, channel: this.#channel, err: error },
        `${WHERE}: subscribe to ${this.#channel} failed (${text}); resets made in other processes reach this one within localDeny.maxStaleMs`,
      );
    };
    const keep = (value: unknown) => {
      if (typeof value !== 'function') return;
      if (this.s.closed) this.#stop(value as Unsubscribe);
      else this.#unsubscribe = value as Unsubscribe;
    };
    try {
      const result = subscribe(this.#channel, onMessage);
      if (result !== null && typeof (result as Promise<unknown>)?.then === 'function')
        (result as Promise<unknown>).then(keep, failed);
      else keep(result);
    } catch (error) {
      failed(error);
    }
  }

  /** Tells every process that `key` was reset: it forgets its copies, and refunds before it. */
  reset(key: string): Promise<unknown> {
    return this.#publish(key, key.startsWith('\u0001') ? RESET + key : key);
  }

  /**
   * Tells every process to forget its local refusal of `key` (a refund reopened it, a ban now
   * outlasts it, a lockout ended sooner), cancelling no refund. Never rejects: a failure is the
   * outage's (a store error like any other) unless `quiet`.
   */
  reopened(key: string, quiet = false): Promise<void> {
    return this.#publish(key, REOPENED + key).then(
      () => undefined,
      (error: unknown) => {
        if (!quiet) this.s.outage.fail(error);
      },
    );
  }

  /** Stops the subscription, if one is kept. */
  close(): void {
    const stop = this.#unsubscribe;
    this.#unsubscribe = undefined;
    if (stop !== undefined) this.#stop(stop);
  }

  #publish(key: string, message: string): Promise<unknown> {
    const redisKey = this.s.prefix + key;
    // Classic PUBLISH reaches every node of a Cluster; the key lets a routing client pick its node.
    return this.s.transport.call(['PUBLISH', this.#channel, message], redisKey);
  }

  #stop(stop: Unsubscribe): void {
    try {
      settle(stop());
    } catch {
      // The subscriber connection is going away anyway.
    }
  }
}
