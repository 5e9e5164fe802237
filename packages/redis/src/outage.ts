import { type Clock, channels, type Decision, type Logger } from '@portcullis/core';
import { type OnError, WHERE } from './options.js';

/** What {@link Outage} needs from its store. */
export interface OutageOptions {
  /** `onError`: who decides while Redis fails. */
  policy: OnError;
  /** `probeIntervalMs`: how often a background `PING` asks whether Redis is back. */
  probeMs: number;
  prefix: string;
  clock: Clock;
  logger: Logger | undefined;
  /** Sends one `PING` within the store's deadline; rejects while Redis is still down. */
  probe(): Promise<unknown>;
  /** Whether the store was closed (no probe is started then). */
  closed(): boolean;
  /** Redis answers again: the store writes back what it remembered during the outage. */
  recovered(): void;
}

/**
 * `RedisStore`'s outage state: the first failure of an outage logs once and arms a background
 * probe; while it lasts, decisions go to the `onError` policy without a round trip (one probe per
 * `probeIntervalMs` asks Redis, never a request); the first degraded decision is published on
 * `portcullis:store-error`; the first answer from Redis ends it (one more log line, with the count
 * of degraded decisions) and triggers the write-back.
 */
export class Outage {
  readonly #o: OutageOptions;
  #down = false;
  #downSince = 0;
  #nextProbeAt = 0;
  #probing = false;
  #degraded = 0;
  /** The error of an outage whose first degraded decision is not yet published. */
  #unannounced: { error: unknown } | undefined;

  constructor(options: OutageOptions) {
    this.#o = options;
  }

  /** Whether Redis is considered unavailable (decisions go to `onError`). */
  get down(): boolean {
    return this.#down;
  }

  /** Whether to ask Redis now; while it is down, starts a background probe when one is due. */
  available(): boolean {
    if (!this.#down) return true;
    if (!this.#probing && !this.#o.closed()) {
      const now = this.#o.clock.now();
      if (now >= this.#nextProbeAt) {
        this.#probing = true;
        this.#nextProbeAt = now + this.#o.probeMs;
        this.#o.probe().then(
          () => {
            this.#probing = false;
            this.up();
          },
          () => {
            this.#probing = false;
          },
        );
      }
    }
    return false;
  }

  /** Records a failure: the first one of an outage logs once and arms the probe. */
  fail(error: unknown): void {
    if (this.#down) return;
    const now = this.#o.clock.now();
    this.#down = true;
    this.#downSince = now;
    this.#nextProbeAt = now + this.#o.probeMs;
    this.#degraded = 0;
    this.#unannounced = { error };
    const message = error instanceof Error ? error.message : String(error);
    this.#o.logger?.error(
      {
        code: 'PORTCULLIS_STORE_ERROR',
        store: WHERE,
        prefix: this.#o.prefix,
        onError: this.#o.policy,
        err: error,
      },
      `${WHERE}: Redis failed (${message}); onError '${this.#o.policy}' decides until Redis answers again`,
    );
  }

  /** Redis answered: an outage ends (logged once) and the store writes back. */
  up(): void {
    if (!this.#down) return;
    this.#down = false;
    this.#unannounced = undefined;
    const outageMs = this.#o.clock.now() - this.#downSince;
    this.#o.logger?.warn(
      {
        code: 'PORTCULLIS_STORE_RECOVERED',
        store: WHERE,
        prefix: this.#o.prefix,
        outageMs,
        degradedDecisions: this.#degraded,
      },
      `${WHERE}: Redis answers again after ${outageMs}ms; ${this.#degraded} decisions were made by onError '${this.#o.policy}'`,
    );
    this.#o.recovered();
  }

  /** Counts a degraded decision; the first of an outage is published on `portcullis:store-error`. */
  announce<D extends Decision>(d: D): D {
    this.#degraded++;
    const pending = this.#unannounced;
    if (pending !== undefined) {
      this.#unannounced = undefined;
      if (channels.storeError.hasSubscribers) {
        channels.storeError.publish({ limiter: WHERE, decision: d, error: pending.error });
      }
    }
    return d;
  }

  /** The `onError: 'open'` or `'closed'` answer (a closed one says to retry after a probe). */
  storeError(key: string, limit: number): Decision {
    const probeMs = this.#o.probeMs;
    return this.#o.policy === 'open'
      ? {
          allowed: true,
          reason: 'store-error',
          limit,
          remaining: limit,
          retryAfterMs: 0,
          resetMs: 0,
          key,
        }
      : {
          allowed: false,
          reason: 'store-error',
          limit,
          remaining: 0,
          retryAfterMs: probeMs,
          resetMs: probeMs,
          key,
        };
  }
}
