// The memory store's leases (Store.acquire / Store.release): per key, each lease id and when it
// expires. RedisStore's lease script is a port of this file, so both answer alike.
import type { LeaseAnswer, LeaseRule } from './store.js';

/** The leases of every key, by key, then by lease id: when each expires (ms). */
export class LeaseTable {
  readonly #keys = new Map<string, Map<string, number>>();
  /** Keys held at the last sweep: the table is swept again once it has doubled since. */
  #swept = 64;

  /** Takes or renews lease `lease` of `key` at `now` (see `Store.acquire`). */
  acquire(key: string, rule: LeaseRule, lease: string, now: number): LeaseAnswer {
    let leases = this.#keys.get(key);
    if (leases === undefined) {
      if (this.#keys.size >= this.#swept) this.#sweep(now);
      leases = new Map();
      this.#keys.set(key, leases);
    } else {
      live(leases, rule, now);
    }
    const until = now + rule.leaseMs;
    if (leases.has(lease) || leases.size < rule.max) {
      leases.set(lease, until);
      return { acquired: true, held: leases.size };
    }
    return { acquired: false, held: leases.size };
  }

  /** Gives lease `lease` of `key` back. */
  release(key: string, lease: string): void {
    const leases = this.#keys.get(key);
    if (leases === undefined) return;
    leases.delete(lease);
    if (leases.size === 0) this.#keys.delete(key);
  }

  /** Keys with a lease held (expired ones included until their key is next touched). */
  get size(): number {
    return this.#keys.size;
  }

  /** Forgets keys whose every lease expired: a key nobody touches again still goes. */
  #sweep(now: number): void {
    for (const [key, leases] of this.#keys) {
      let left = false;
      for (const until of leases.values()) {
        if (until > now) {
          left = true;
          break;
        }
      }
      if (!left) this.#keys.delete(key);
    }
    this.#swept = Math.max(64, this.#keys.size * 2);
  }
}

/**
 * Forgets the expired leases of one key and clamps the ones stamped beyond `now + leaseMs` (a
 * clock that stepped back) to that, so no lease outlives its length after a step.
 */
function live(leases: Map<string, number>, rule: LeaseRule, now: number): void {
  const latest = now + rule.leaseMs;
  for (const [id, until] of leases) {
    if (until <= now) leases.delete(id);
    else if (until > latest) leases.set(id, latest);
  }
}
