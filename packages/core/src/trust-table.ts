import type { TrustRule } from './store.js';

/** One item's place in one ordered list (an item in three lists has three links). */
class Link<T> {
  prev: Link<T> | undefined = undefined;
  next: Link<T> | undefined = undefined;
  constructor(readonly item: T) {}
}

/**
 * A doubly linked list of links: a move to the end is four pointer writes, where a Map's delete
 * and re-insert hashes twice and leaves a hole for a rehash to sweep (a refresh of a trust moves
 * it in three orders at once). The links are objects of one class, so that every list's calls
 * stay monomorphic: links named by accessor functions per list made each call a dispatch.
 */
class Chain<T> {
  first: Link<T> | undefined = undefined;
  last: Link<T> | undefined = undefined;
  length = 0;

  push(link: Link<T>): void {
    const last = this.last;
    link.prev = last;
    link.next = undefined;
    if (last === undefined) this.first = link;
    else last.next = link;
    this.last = link;
    this.length++;
  }

  remove(link: Link<T>): void {
    const { prev, next } = link;
    if (prev === undefined) this.first = next;
    else prev.next = next;
    if (next === undefined) this.last = prev;
    else next.prev = prev;
    link.prev = undefined;
    link.next = undefined;
    this.length--;
  }

  toEnd(link: Link<T>): void {
    if (this.last === link) return;
    this.remove(link);
    this.push(link);
  }
}

/** One trust: a member (client key) of a group (an account), and when it was last earned. */
class Trust {
  /** Its places in the table's order and in its group's (least recently earned first). */
  readonly inTable = new Link<Trust>(this);
  readonly inGroup = new Link<Trust>(this);
  constructor(
    readonly group: Group,
    readonly member: string,
    /** The store's time of its latest success. */
    public at: number,
  ) {}
}

/** A group's trusts, by member and least recently earned first. */
class Group {
  /**
   * Its trusts by member once it held two (most groups are one user's one device: a map each
   * would be most of the table's memory and two more cache misses per refresh).
   */
  byMember: Map<string, Trust> | undefined = undefined;
  readonly trusts = new Chain<Trust>();
  /** Its place among the groups of its size (the one changed longest ago first). */
  readonly inSize = new Link<Group>(this);
  constructor(readonly name: string) {}

  /** Its trust of `member`, if any. */
  find(member: string): Trust | undefined {
    if (this.byMember !== undefined) return this.byMember.get(member);
    const only = this.trusts.first?.item;
    return only !== undefined && only.member === member ? only : undefined;
  }

  /** Takes `t` (a new member's trust) as its latest. */
  take(t: Trust): void {
    const only = this.trusts.first?.item;
    if (this.byMember === undefined && only !== undefined)
      this.byMember = new Map([[only.member, only]]);
    this.byMember?.set(t.member, t);
    this.trusts.push(t.inGroup);
  }

  /** Lets go of `t` (one of its trusts). */
  drop(t: Trust): void {
    this.byMember?.delete(t.member);
    this.trusts.remove(t.inGroup);
  }
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
  readonly #order = new Chain<Trust>();
  /** The groups by their number of trusts, each chain ordered by its groups' latest change. */
  readonly #bySize = new Map<number, Chain<Group>>();
  #largest = 0;

  get size(): number {
    return this.#order.length;
  }

  has(group: string, member: string, now: number, rule: TrustRule): boolean {
    const t = this.#groups.get(group)?.find(member);
    return t !== undefined && live(t, now, rule);
  }

  add(group: string, member: string, now: number, rule: TrustRule): void {
    let g = this.#groups.get(group);
    const known = g?.find(member);
    if (g !== undefined && known !== undefined) {
      // A refresh: latest in its group, in the table and among the groups of its size.
      known.at = now;
      g.trusts.toEnd(known.inGroup);
      this.#order.toEnd(known.inTable);
      this.#bySize.get(g.trusts.length)?.toEnd(g.inSize);
      return;
    }
    for (let t = this.#order.first?.item; t !== undefined && !live(t, now, rule); )
      t = this.#forget(t);
    while (this.#order.length >= rule.maxTrusted) {
      g = this.#groups.get(group);
      const own = g?.trusts.length ?? 0;
      // A group as large as the largest makes room from its own trusts: it cannot grow past the
      // others by taking theirs.
      const from =
        g !== undefined && own > 0 && own >= this.#largest
          ? g
          : this.#bySize.get(this.#largest)?.first?.item;
      const victim = from?.trusts.first?.item;
      if (victim === undefined) break;
      this.#forget(victim);
    }
    g = this.#groups.get(group);
    if (g === undefined) {
      g = new Group(group);
      this.#groups.set(group, g);
    }
    const t = new Trust(g, member, now);
    g.take(t);
    this.#order.push(t.inTable);
    this.#resize(g, g.trusts.length - 1);
  }

  /** Forgets `t`; returns the trust that is now the table's oldest. */
  #forget(t: Trust): Trust | undefined {
    const g = t.group;
    if (g.find(t.member) === t) {
      g.drop(t);
      this.#order.remove(t.inTable);
      this.#resize(g, g.trusts.length + 1);
      if (g.trusts.length === 0) this.#groups.delete(g.name);
    }
    return this.#order.first?.item;
  }

  /** `g` holds `g.trusts.length` trusts now, `from` before; it goes last among its new size. */
  #resize(g: Group, from: number): void {
    const to = g.trusts.length;
    if (from > 0) {
      const chain = this.#bySize.get(from);
      if (chain !== undefined) {
        chain.remove(g.inSize);
        if (chain.length === 0) this.#bySize.delete(from);
      }
    }
    if (to > 0) {
      let chain = this.#bySize.get(to);
      if (chain === undefined) {
        chain = new Chain<Group>();
        this.#bySize.set(to, chain);
      }
      chain.push(g.inSize);
    }
    if (to > this.#largest) this.#largest = to;
    else if (from === this.#largest && !this.#bySize.has(from)) this.#largest = to;
  }
}

/** Earned less than `trustMs` ago (a trust stamped in the future, after a clock step, counts as now). */
function live(t: Trust, now: number, rule: TrustRule): boolean {
  return now - Math.min(t.at, now) < rule.trustMs;
}
