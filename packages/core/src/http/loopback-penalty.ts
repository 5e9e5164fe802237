import { systemTimers, type Timers } from '../clock.js';
import type { MaybePromise } from '../promise.js';
import type { LoopbackPenaltyOptions } from './auth-layer-options.js';

/**
 * The loopback penalty: a loopback-exempt client's failures are answered after
 * `min(baseMs · 2^(n−1), maxMs)` (n its consecutive failures, at most 6 counted); its right
 * credential resets n and is never delayed. Per process (loopback is this host). Bounded: at most
 * {@link MAX_PENALIZED} clients remembered and {@link MAX_WAITERS} answers waiting; past that an
 * answer goes at once. `close()` answers every waiter at once.
 */
export class LoopbackPenalty {
  readonly #base: number;
  readonly #max: number;
  readonly #timers: Timers;
  readonly #streaks = new Map<string, number>();
  readonly #waiting = new Map<object, () => void>();

  constructor(o: LoopbackPenaltyOptions, timers: Timers | undefined) {
    this.#base = o.baseMs ?? 250;
    this.#max = o.maxMs ?? 5_000;
    this.#timers = timers ?? systemTimers;
  }

  /** How many answers wait now. */
  get waiting(): number {
    return this.#waiting.size;
  }

  success(key: string): void {
    this.#streaks.delete(key);
  }

  /** The delay of this failure of `key` (counting it). */
  failure(key: string): number {
    const n = Math.min((this.#streaks.get(key) ?? 0) + 1, 6);
    this.#streaks.delete(key);
    if (this.#streaks.size >= MAX_PENALIZED) {
      const oldest = this.#streaks.keys().next().value as string;
      this.#streaks.delete(oldest);
    }
    this.#streaks.set(key, n);
    return Math.min(this.#base * 2 ** (n - 1), this.#max);
  }

  /** `value` after `ms` (at once when too many wait). */
  delay<T>(value: T, ms: number): MaybePromise<T> {
    if (this.#waiting.size >= MAX_WAITERS) return value;
    return new Promise<T>((resolve) => {
      const token = {};
      const done = () => {
        if (!this.#waiting.delete(token)) return;
        this.#timers.clearTimeout(handle);
        resolve(value);
      };
      const handle = this.#timers.setTimeout(done, ms);
      this.#waiting.set(token, done);
    });
  }

  close(): void {
    for (const done of [...this.#waiting.values()]) done();
    this.#streaks.clear();
  }
}

/** Loopback clients whose failure streak is remembered. */
export const MAX_PENALIZED = 1024;
/** Penalised answers waiting at once. */
export const MAX_WAITERS = 1024;
