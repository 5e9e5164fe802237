import type { Clock, Logger } from '@portcullis/core';
import { withoutUndefined } from '@portcullis/core/adapter';
import { WHERE } from './options.js';
import { isWaitReply, RedisTimeoutError } from './replies.js';
import type { Settings } from './settings.js';
import type { Transport } from './transport.js';

/** What {@link DurableLockouts} needs from its store. */
export interface DurableLockoutsOptions {
  /** `durability.replicas`. */
  replicas: number;
  /** `durability.timeoutMs`, already at most `storeTimeoutMs`. */
  timeoutMs: number;
  /** The store's `timeoutMs`: no decision waits longer, script call and WAIT together. */
  storeTimeoutMs: number;
  /** The store's `probeIntervalMs`: during an episode, at most one WAIT per interval. */
  probeMs: number;
  prefix: string;
  clock: Clock;
  logger: Logger | undefined;
  /**
   * Sends `WAIT replicas ms` on `redisKey`'s node, raced against `deadlineMs`; resolves to how many
   * replicas acknowledged, rejects when it failed or ran out of time.
   */
  wait(redisKey: string, replicas: number, ms: number, deadlineMs: number): Promise<number>;
}

/**
 * `RedisStore`'s `durability`: `WAIT replicas ms` on a key's node after a decision that wrote a
 * lockout or a ban, bounded by what the store's `timeoutMs` left of the decision. A `WAIT` that
 * reached fewer replicas (or failed) starts an episode, logged once: while it lasts at most one
 * `WAIT` goes out per `probeIntervalMs` (a `WAIT` holds its connection, so every call queued behind
 * it waits too), and the lockout starts in between return at once. The first `WAIT` that reaches
 * the replicas again ends it (one more warning, with the count of lockouts left unconfirmed).
 */
export class DurableLockouts {
  readonly replicas: number;
  readonly timeoutMs: number;
  readonly #o: DurableLockoutsOptions;
  /** While `WAIT`s reach fewer replicas than asked: lockout starts not confirmed so far. */
  #short: { since: number; unconfirmed: number; nextWaitAt: number } | undefined;

  constructor(options: DurableLockoutsOptions) {
    this.#o = options;
    this.replicas = options.replicas;
    this.timeoutMs = options.timeoutMs;
  }

  /**
   * The `WAIT` after `redisKey`'s lockout was written by a call sent at `from`. Resolves when it
   * answered or its time is up; never rejects.
   */
  after(redisKey: string, from: number): Promise<void> {
    const o = this.#o;
    const now = o.clock.now();
    const short = this.#short;
    if (short !== undefined && now < short.nextWaitAt) {
      short.unconfirmed++;
      return Promise.resolve();
    }
    const left = o.storeTimeoutMs - Math.max(0, now - from);
    if (left < 1) {
      this.#shortfall(undefined, new RedisTimeoutError(o.storeTimeoutMs));
      return Promise.resolve();
    }
    const ms = Math.min(this.timeoutMs, left);
    if (short !== undefined) short.nextWaitAt = now + o.probeMs;
    return o.wait(redisKey, this.replicas, ms, left).then(
      (reached) => {
        if (reached >= this.replicas) this.#reached();
        else this.#shortfall(reached, undefined);
      },
      (error: unknown) => this.#shortfall(undefined, error),
    );
  }

  /** A lockout start left unconfirmed: the first of an episode logs once. */
  #shortfall(reached: number | undefined, error: unknown): void {
    const o = this.#o;
    const now = o.clock.now();
    const short = this.#short;
    if (short !== undefined) {
      short.unconfirmed++;
      return;
    }
    this.#short = { since: now, unconfirmed: 1, nextWaitAt: now + o.probeMs };
    const why =
      reached !== undefined
        ? `reached ${reached} of ${this.replicas} replicas within ${this.timeoutMs}ms`
        : `failed (${error instanceof Error ? error.message : String(error)})`;
    o.logger?.warn(
      withoutUndefined({
        code: 'PORTCULLIS_DURABILITY_SHORT',
        store: WHERE,
        prefix: o.prefix,
        replicas: this.replicas,
        reached,
        timeoutMs: this.timeoutMs,
        err: error,
      }),
      `${WHERE}: WAIT after a lockout ${why}; a failover now may lose lockouts. Until a WAIT reaches the replicas again, at most one is sent per ${o.probeMs}ms`,
    );
  }

  /** A `WAIT` reached the replicas: an episode of shortfalls ends (one warning). */
  #reached(): void {
    const short = this.#short;
    if (short === undefined) return;
    this.#short = undefined;
    const o = this.#o;
    const forMs = o.clock.now() - short.since;
    o.logger?.warn(
      {
        code: 'PORTCULLIS_DURABILITY_RESTORED',
        store: WHERE,
        prefix: o.prefix,
        shortForMs: forMs,
        unconfirmed: short.unconfirmed,
      },
      `${WHERE}: WAIT reaches the replicas again after ${forMs}ms; ${short.unconfirmed} lockouts were not confirmed on a replica`,
    );
  }
}

/** The WAIT after a lockout starts (`durability`), within its own deadline. */
export function waitingLockouts(
  transport: Transport,
  o: Settings,
  d: NonNullable<Settings['durability']>,
): DurableLockouts {
  return new DurableLockouts({
    replicas: d.replicas,
    timeoutMs: d.timeoutMs,
    storeTimeoutMs: o.timeoutMs,
    probeMs: o.probeMs,
    prefix: o.prefix,
    clock: o.clock,
    logger: o.logger,
    wait: (redisKey, replicas, ms, deadlineMs) =>
      transport.deadline(
        () => transport.call(['WAIT', String(replicas), String(ms)], redisKey),
        isWaitReply,
        deadlineMs,
      ),
  });
}
