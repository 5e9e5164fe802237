import type { TrustRule } from './store.js';

/** One trust: a member (client key) of a group (an account), and the op that last earned it. */
interface Trust {
  readonly group: Group;
  readonly member: string;
  /** The store's time of its latest success. */
  at: number;
}

interface Group {
  readonly name: string;
  /** Its trusts, the least recently earned first. */
  readonly trusts: Map<string, Trust>;
}

/**
 * One trust table of the memory store (see `Store.trust`): which members (client keys) earned
 * trust for which groups (accounts), and when. Bounded by the rule's `maxTrusted`.
 *
 * Every change of the table (a trust earned or refreshed, a trust forgotten) is one step of its
 * order. A new trust that finds the table full first forgets expired trusts, least recently
 * earned first, up to the first live one; then, while it is still full: when the new trust's group
 * holds at least as many trusts as the largest, that group's least recently earned trust; else the
 * least recently earned trust of the largest group, of those the one changed longest ago. So a
 * flood of successes for one account (an attacker who holds one) replaces only that account's
 * trusts once it is as large as any other, and taking a trust from a user with one device needs
 * as many attacker-held accounts as the table holds trusts. Every step is O(1): a busy table with
 * thousands of one-device accounts pays no scan for a new trust.
 * @internal
 */
export class TrustTable {
  readonly #groups = new Map<string, Group>();
  /** Every trust, least recently earned first: expiry reads from the front. */
  readonly #order = new Set<Trust>();
  /** The groups by their number of trusts, each set ordered by its groups' latest change. */
  readonly #bySize = new Map<number, Set<Group>>();
  #largest = 0;

  get size(): number {
    return this.#order.size;
  }

  has(group: string, member: string, now: number, rule: TrustRule): boolean {
    const t = this.#groups.get(group)?.trusts.get(member);
    return t !== undefined && live(t, now, rule);
  }

  add(group: string, member: string, now: number, rule: TrustRule): void {
    let g = this.#groups.get(group);
    const known = g?.trusts.get(member);
    if (g !== undefined && known !== undefined) {
      // A refresh: latest in its group, in the table and among the groups of its size.
      g.trusts.delete(member);
      g.trusts.set(member, known);
      this.#order.delete(known);
      this.#order.add(known);
      known.at = now;
      this.#touch(g);
      return;
    }
    for (const t of this.#order) {
      if (live(t, now, rule)) break;
      this.#forget(t);
    }
    while (this.#order.size >= rule.maxTrusted) {
      g = this.#groups.get(group);
      const own = g?.trusts.size ?? 0;
      // A group as large as the largest makes room from its own trusts: it cannot grow past the
      // others by taking theirs.
      const from =
        g !== undefined && own > 0 && own >= this.#largest
          ? g
          : (this.#bySize.get(this.#largest)?.values().next().value as Group | undefined);
      const victim = from?.trusts.values().next().value as Trust | undefined;
      if (victim === undefined) break;
      this.#forget(victim);
    }
    g = this.#groups.get(group);
    if (g === undefined) {
      g = { name: group, trusts: new Map() };
      this.#groups.set(group, g);
    }
    const t: Trust = { group: g, member, at: now };
    g.trusts.set(member, t);
    this.#order.add(t);
    this.#resize(g, g.trusts.size - 1);
  }

  #forget(t: Trust): void {
    const g = t.group;
    if (!g.trusts.delete(t.member)) return;
    this.#order.delete(t);
    this.#resize(g, g.trusts.size + 1);
    if (g.trusts.size === 0) this.#groups.delete(g.name);
  }

  /** `g` changed: it goes last among the groups of its size. */
  #touch(g: Group): void {
    const set = this.#bySize.get(g.trusts.size);
    set?.delete(g);
    set?.add(g);
  }

  /** `g` holds `g.trusts.size` trusts now, `from` before; it goes last among its new size. */
  #resize(g: Group, from: number): void {
    const to = g.trusts.size;
    if (from > 0) {
      const set = this.#bySize.get(from);
      set?.delete(g);
      if (set !== undefined && set.size === 0) this.#bySize.delete(from);
    }
    if (to > 0) {
      let set = this.#bySize.get(to);
      if (set === undefined) {
        set = new Set();
        this.#bySize.set(to, set);
      }
      set.add(g);
    }
    if (to > this.#largest) this.#largest = to;
    else if (from === this.#largest && !this.#bySize.has(from)) this.#largest = to;
  }
}

/** Earned less than `trustMs` ago (a trust stamped in the future, after a clock step, counts as now). */
function live(t: Trust, now: number, rule: TrustRule): boolean {
  return now - Math.min(t.at, now) < rule.trustMs;
}
