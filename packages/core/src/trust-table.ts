import type { TrustRule } from './store.js';

/**
 * A doubly linked list threaded through its items (`prev`/`next` fields named by the list): a
 * move to the end is four pointer writes, where a Map's delete and re-insert hashes twice and
 * leaves a hole for a rehash to sweep (a refresh of a trust moves it in three orders at once).
 */
class Chain<T extends object> {
  first: T | undefined = undefined;
  last: T | undefined = undefined;
  length = 0;
  constructor(
    private readonly prevOf: (item: T) => T | undefined,
    private readonly nextOf: (item: T) => T | undefined,
    private readonly link: (item: T, prev: T | undefined, next: T | undefined) => void,
  ) {}

  push(item: T): void {
    this.link(item, this.last, undefined);
    if (this.last === undefined) this.first = item;
    else this.link(this.last, this.prevOf(this.last), item);
    this.last = item;
    this.length++;
  }

  remove(item: T): void {
    const prev = this.prevOf(item);
    const next = this.nextOf(item);
    if (prev === undefined) this.first = next;
    else this.link(prev, this.prevOf(prev), next);
    if (next === undefined) this.last = prev;
    else this.link(next, prev, this.nextOf(next));
    this.link(item, undefined, undefined);
    this.length--;
  }

  toEnd(item: T): void {
    if (this.last === item) return;
    this.remove(item);
    this.push(item);
  }
}

/** One trust: a member (client key) of a group (an account), and when it was last earned. */
interface Trust {
  readonly group: Group;
  readonly member: string;
  /** The store's time of its latest success. */
  at: number;
  /** Neighbours in the table's order and in its group's (least recently earned first). */
  prev: Trust | undefined;
  next: Trust | undefined;
  gprev: Trust | undefined;
  gnext: Trust | undefined;
}

interface Group {
  readonly name: string;
  readonly byMember: Map<string, Trust>;
  readonly trusts: Chain<Trust>;
  /** Neighbours among the groups of its size (the one changed longest ago first). */
  prev: Group | undefined;
  next: Group | undefined;
}

const tableChain = () =>
  new Chain<Trust>(
    (t) => t.prev,
    (t) => t.next,
    (t, p, n) => {
      t.prev = p;
      t.next = n;
    },
  );
const groupChain = () =>
  new Chain<Trust>(
    (t) => t.gprev,
    (t) => t.gnext,
    (t, p, n) => {
      t.gprev = p;
      t.gnext = n;
    },
  );
const sizeChain = () =>
  new Chain<Group>(
    (g) => g.prev,
    (g) => g.next,
    (g, p, n) => {
      g.prev = p;
      g.next = n;
    },
  );

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
  readonly #order = tableChain();
  /** The groups by their number of trusts, each chain ordered by its groups' latest change. */
  readonly #bySize = new Map<number, Chain<Group>>();
  #largest = 0;

  get size(): number {
    return this.#order.length;
  }

  has(group: string, member: string, now: number, rule: TrustRule): boolean {
    const t = this.#groups.get(group)?.byMember.get(member);
    return t !== undefined && live(t, now, rule);
  }

  add(group: string, member: string, now: number, rule: TrustRule): void {
    let g = this.#groups.get(group);
    const known = g?.byMember.get(member);
    if (g !== undefined && known !== undefined) {
      // A refresh: latest in its group, in the table and among the groups of its size.
      known.at = now;
      g.trusts.toEnd(known);
      this.#order.toEnd(known);
      this.#bySize.get(g.trusts.length)?.toEnd(g);
      return;
    }
    for (let t = this.#order.first; t !== undefined && !live(t, now, rule); t = this.#order.first)
      this.#forget(t);
    while (this.#order.length >= rule.maxTrusted) {
      g = this.#groups.get(group);
      const own = g?.trusts.length ?? 0;
      // A group as large as the largest makes room from its own trusts: it cannot grow past the
      // others by taking theirs.
      const from =
        g !== undefined && own > 0 && own >= this.#largest
          ? g
          : this.#bySize.get(this.#largest)?.first;
      const victim = from?.trusts.first;
      if (victim === undefined) break;
      this.#forget(victim);
    }
    g = this.#groups.get(group);
    if (g === undefined) {
      g = {
        name: group,
        byMember: new Map(),
        trusts: groupChain(),
        prev: undefined,
        next: undefined,
      };
      this.#groups.set(group, g);
    }
    const t: Trust = {
      group: g,
      member,
      at: now,
      prev: undefined,
      next: undefined,
      gprev: undefined,
      gnext: undefined,
    };
    g.byMember.set(member, t);
    g.trusts.push(t);
    this.#order.push(t);
    this.#resize(g, g.trusts.length - 1);
  }

  #forget(t: Trust): void {
    const g = t.group;
    if (!g.byMember.delete(t.member)) return;
    g.trusts.remove(t);
    this.#order.remove(t);
    this.#resize(g, g.trusts.length + 1);
    if (g.trusts.length === 0) this.#groups.delete(g.name);
  }

  /** `g` holds `g.trusts.length` trusts now, `from` before; it goes last among its new size. */
  #resize(g: Group, from: number): void {
    const to = g.trusts.length;
    if (from > 0) {
      const chain = this.#bySize.get(from);
      if (chain !== undefined) {
        chain.remove(g);
        if (chain.length === 0) this.#bySize.delete(from);
      }
    }
    if (to > 0) {
      let chain = this.#bySize.get(to);
      if (chain === undefined) {
        chain = sizeChain();
        this.#bySize.set(to, chain);
      }
      chain.push(g);
    }
    if (to > this.#largest) this.#largest = to;
    else if (from === this.#largest && !this.#bySize.has(from)) this.#largest = to;
  }
}

/** Earned less than `trustMs` ago (a trust stamped in the future, after a clock step, counts as now). */
function live(t: Trust, now: number, rule: TrustRule): boolean {
  return now - Math.min(t.at, now) < rule.trustMs;
}
