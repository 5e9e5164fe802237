import type { TimerHandle, Timers } from '@portcullis/core';
import { callTimers } from './deadlines.js';
import type { IndexWriter } from './index-writer.js';
import type { Invalidations } from './invalidations.js';
import { failureReplyValid } from './replies.js';
import { lockoutArg } from './script-args.js';
import { SCRIPT } from './script.js';
import type { SeenLockout } from './seen-lockouts.js';
import type { Shared } from './shared.js';

/** What {@link WriteBack} needs besides the shared parts. */
export interface WriteBackOptions {
  readonly probeMs: number;
  /** The timers given as an option, else undefined (the system's, each timer unref()ed). */
  readonly timers: Timers | undefined;
  readonly index: IndexWriter;
  readonly invalidations: Invalidations;
}

/**
 * Writes lockouts this process has seen back to a Redis that lost them (restarted empty, failed
 * over to a replica that never had them, or down while the fallback started them), each with the
 * time it has left: one script call each, op `w`, where the longer of Redis' lockout and this one
 * stands. Without `subscribe` only the lockouts the fallback started go (a reset made in another
 * process would not reach this one, and a write-back must never undo it).
 */
export class WriteBack {
  /** When each recent write-back was sent (see {@link WriteBack.resetHeard}). */
  readonly #sent = new Map<string, number>();
  /** While write-backs wait for Redis to come back: the timer that probes for it. */
  #retrying: TimerHandle | undefined;

  constructor(
    private readonly s: Shared,
    private readonly o: WriteBackOptions,
  ) {}

  /**
   * Every lockout seen and still running goes back to Redis (see `RedisStore.writeBackLockouts`):
   * with `subscribe` all of them, else the pending ones; during an outage once Redis answers.
   */
  requested(): void {
    const s = this.s;
    if (s.closed || s.seen.size === 0) return;
    if (this.o.invalidations.subscribed) for (const seen of s.seen.values()) seen.pending = true;
    if (!s.outage.down) this.recovered();
  }

  /**
   * After an outage (or when asked): writes each pending lockout back to Redis; with `subscribe`,
   * every lockout seen (Redis may be a promoted replica that lacks some). A failed write-back
   * stays pending for the next recovery.
   */
  recovered(): void {
    const s = this.s;
    if (s.closed || s.seen.size === 0) return;
    const now = s.clock.now();
    const all = this.o.invalidations.subscribed;
    for (const [key, seen] of s.seen) if (all || seen.pending) this.#one(key, seen, now);
  }

  /**
   * Redis answered without a lockout this process saw (a promoted replica that never had it, a
   * Redis restarted empty): with `subscribe` (so that a reset made elsewhere would have reached
   * this process and removed it), it is written back now.
   */
  lost(key: string): void {
    const s = this.s;
    if (!this.o.invalidations.subscribed) return;
    const seen = s.seen.get(key);
    if (seen === undefined) return;
    seen.pending = true;
    if (!s.outage.down) this.#one(key, seen, s.clock.now());
  }

  /**
   * A reset of `key` made elsewhere reached this process shortly after it wrote `key`'s lockout back
   * (the write-back may have landed after the reset): the reset is made again here, so that it
   * wins. Only the key and its index entry go; every other process already heard of the reset.
   */
  resetHeard(key: string): void {
    const s = this.s;
    const at = this.#sent.get(key);
    if (at === undefined) return;
    this.#sent.delete(key);
    if (s.clock.now() - at > 2 * s.transport.timeoutMs || s.closed) return;
    const redisKey = s.prefix + key;
    s.transport
      .deadline(
        () => Promise.all(this.o.index.erase(redisKey)),
        (r): r is unknown[] => Array.isArray(r),
      )
      .then(
        () => undefined,
        (error: unknown) => s.outage.fail(error),
      );
  }

  /** Stops the retry timer and forgets what was sent. */
  close(): void {
    if (this.#retrying !== undefined) {
      (this.o.timers ?? callTimers).clearTimeout(this.#retrying);
      this.#retrying = undefined;
    }
    this.#sent.clear();
  }

  #one(key: string, seen: SeenLockout, now: number): void {
    const s = this.s;
    const rule = seen.rule;
    const left = s.seen.left(key, rule, now);
    if (left <= 0) return;
    seen.pending = true;
    // Kept in the order they were sent, so that the old ones are dropped from the front: the map
    // never holds more than the write-backs of the last 2 × timeoutMs.
    const sent = this.#sent;
    sent.delete(key);
    for (const [k, at] of sent) {
      if (now - at <= 2 * s.transport.timeoutMs && now >= at) break;
      sent.delete(k);
    }
    sent.set(key, now);
    const args = s.args.of(key, 'w', String(left), String(rule.windowMs), lockoutArg(rule));
    s.transport
      .run(args, SCRIPT, (r) => failureReplyValid(r, rule, 'w'))
      .then(
        (reply) => {
          void this.o.index.list(key, reply[2], reply[4] === 3);
          if (s.seen.get(key) === seen) seen.pending = false;
        },
        (error: unknown) => {
          s.outage.fail(error);
          this.#retry();
        },
      );
  }

  /**
   * A write-back failed: Redis is probed every `probeIntervalMs` until it answers (the probe's
   * success writes back what is pending), even when no decision comes to start the probe (an
   * idle process whose client reported a failover). The timer is unref()ed and stops once nothing
   * is pending or Redis answered.
   */
  #retry(): void {
    const s = this.s;
    if (this.#retrying !== undefined || s.closed) return;
    const run = () => {
      this.#retrying = undefined;
      if (s.closed || !s.outage.down) return;
      let pending = false;
      const now = s.clock.now();
      for (const [key, seen] of s.seen)
        if (seen.pending && s.seen.left(key, seen.rule, now) > 0) {
          pending = true;
          break;
        }
      if (!pending) return;
      s.outage.available();
      this.#retry();
    };
    const own = this.o.timers;
    if (own !== undefined) {
      this.#retrying = own.setTimeout(run, this.o.probeMs);
    } else {
      const timer = setTimeout(run, this.o.probeMs);
      timer.unref();
      this.#retrying = timer;
    }
  }
}
