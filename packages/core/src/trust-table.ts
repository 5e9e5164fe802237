import type { TrustRule } from './store.js';

/**
 * One trust table of the memory store (see `Store.trust`): which members (client keys) earned
 * trust for which groups (an account, or the scope), and when.
 *
 * The bound is the whole table's, and the eviction order is what keeps one group from taking
 * the others' trust: expired trusts go first; then, when the new trust's group is as large as the
 * largest, its own oldest trust; else the oldest trust of the largest group (ties: the group whose
 * oldest trust is oldest). A flood of successes for one account (an attacker who holds one)
 * therefore replaces only that account's trusts once it is as large as any other; taking a trust
 * from a user with one device needs as many attacker-held groups as the table holds trusts.
 * @internal
 */
export class TrustTable {
  /** Per group, member → when it was trusted; each map in time order (a refresh moves to the end). */
  readonly #groups = new Map<string, Map<string, number>>();
  /** Every trust in time order, as `group\0member` → [group, member]: expiry pops from the front. */
  readonly #order = new Map<string, readonly [string, string]>();
  /** Groups by their number of trusts (only sizes that some group has). */
  readonly #bySize = new Map<number, Set<string>>();
  #largest = 0;

  get size(): number {
    return this.#order.size;
  }

  has(group: string, member: string, now: number, rule: TrustRule): boolean {
    const at = this.#groups.get(group)?.get(member);
    // A trust stamped in the future (the clock stepped back) counts as earned now.
    return at !== undefined && now - Math.min(at, now) < rule.trustMs;
  }

  add(group: string, member: string, now: number, rule: TrustRule): void {
    const id = `${group}\u0000${member}`;
    let members = this.#groups.get(group);
    if (members?.has(member)) {
      members.delete(member);
      members.set(member, now);
      this.#order.delete(id);
      this.#order.set(id, [group, member]);
      return;
    }
    this.#expire(now, rule);
    // Expiry may have emptied (and dropped) the group's map.
    members = this.#groups.get(group);
    while (this.#order.size >= rule.maxTrusted) {
      // A group as large as the largest makes room from its own trusts: it cannot grow past the
      // others by taking theirs.
      const own = members?.size ?? 0;
      if (members !== undefined && own > 0 && own >= this.#largest) {
        const first = members.keys().next().value as string;
        this.#forget(`${group}\u0000${first}`, group, first);
      } else this.#evictOne();
      members = this.#groups.get(group);
    }
    if (members === undefined) {
      members = new Map();
      this.#groups.set(group, members);
    }
    this.#resize(group, members.size, members.size + 1);
    members.set(member, now);
    this.#order.set(id, [group, member]);
  }

  /** Forgets expired trusts, oldest first (stops at the first live one). */
  #expire(now: number, rule: TrustRule): void {
    for (const [id, [group, member]] of this.#order) {
      const at = this.#groups.get(group)?.get(member) as number;
      if (now - Math.min(at, now) < rule.trustMs) return;
      this.#forget(id, group, member);
    }
  }

  /** Forgets the oldest trust of the largest group (ties: the group whose oldest trust is oldest). */
  #evictOne(): void {
    const candidates = this.#bySize.get(this.#largest);
    if (candidates === undefined) return;
    let victim: [string, string] | undefined;
    let oldest = Number.POSITIVE_INFINITY;
    for (const group of candidates) {
      const first = this.#groups.get(group)?.entries().next().value;
      if (first !== undefined && first[1] < oldest) {
        oldest = first[1];
        victim = [group, first[0]];
      }
    }
    if (victim !== undefined) this.#forget(`${victim[0]}\u0000${victim[1]}`, victim[0], victim[1]);
  }

  #forget(id: string, group: string, member: string): void {
    const members = this.#groups.get(group);
    if (members === undefined || !members.delete(member)) return;
    this.#order.delete(id);
    this.#resize(group, members.size + 1, members.size);
    if (members.size === 0) this.#groups.delete(group);
  }

  #resize(group: string, from: number, to: number): void {
    if (from > 0) {
      const set = this.#bySize.get(from);
      set?.delete(group);
      if (set !== undefined && set.size === 0) this.#bySize.delete(from);
    }
    if (to > 0) {
      let set = this.#bySize.get(to);
      if (set === undefined) {
        set = new Set();
        this.#bySize.set(to, set);
      }
      set.add(group);
    }
    if (to > this.#largest) this.#largest = to;
    else if (from === this.#largest && !this.#bySize.has(from)) this.#largest = to;
  }
}
