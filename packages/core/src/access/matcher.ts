import { embeddedV4, type ParsedIp } from '../ip.js';
import { normalizeOrigin } from '../origin.js';
import type { AccessKind, AccessSubject } from './subject.js';

/** What an access rule does to a request it matches. */
export type AccessAction = 'allow' | 'deny';

/** A rule of an access list, as `rules()` and `check()` report it. */
export interface AccessRule {
  /** The canonical subject: `ip:10.0.0.0/8`, `ip:203.0.113.7`, `account:alice`, `origin:https://a.example`. */
  readonly subject: string;
  /** What the subject is. */
  readonly kind: AccessKind;
  /** `deny`: refused (403); `allow`: not limited. */
  readonly action: AccessAction;
  /** Why, as the operator wrote it (`''` when they gave none); goes into the refusal and the log. */
  readonly reason: string;
  /** When the rule ends (this process's clock, ms since the epoch); undefined: until removed. */
  readonly until: number | undefined;
}

/** What a request is matched on: any of them may be unknown. */
export interface AccessQuery {
  /** The client address, parsed (the gates resolve it the one way they resolve every client). */
  readonly ip?: ParsedIp | undefined;
  /** The account the request acts for, as written (`alice`). */
  readonly account?: string | undefined;
  /** The request's `Origin` header, raw. */
  readonly origin?: string | undefined;
}

type Entry = AccessRule;

/** The live rules of one prefix length: network → rule. */
interface Prefixes<K> {
  readonly prefix: number;
  readonly nets: Map<K, Entry>;
}

const live = (e: Entry | undefined, now: number): Entry | undefined =>
  e === undefined || (e.until !== undefined && e.until <= now) ? undefined : e;

function v4Net(n: number, prefix: number): number {
  return prefix === 32 ? n : (n & ~(0xffffffff >>> prefix)) >>> 0;
}

function v6Net(g: readonly number[], prefix: number): string {
  let out = '';
  for (let i = 0; i < 8; i++) {
    const bits = Math.min(16, Math.max(0, prefix - i * 16));
    const x = bits === 0 ? 0 : (g[i] as number) & (0xffff << (16 - bits)) & 0xffff;
    out += i === 0 ? x.toString(16) : `:${x.toString(16)}`;
  }
  return out;
}

/**
 * The rules of a list compiled for lookups that cost no round trip and no scan: an address is
 * looked up once per prefix length in use (longest first, so the most specific network decides),
 * an account or origin once. Rebuilt whenever the list changes; a request only reads it.
 */
export class AccessMatcher {
  readonly #v4: Prefixes<number>[] = [];
  readonly #v6: Prefixes<string>[] = [];
  readonly #accounts = new Map<string, Entry>();
  readonly #origins = new Map<string, Entry>();
  /** How many rules it holds. */
  readonly size: number;

  constructor(
    rules: ReadonlyArray<{ readonly rule: AccessRule; readonly subject: AccessSubject }>,
  ) {
    const v4 = new Map<number, Map<number, Entry>>();
    const v6 = new Map<number, Map<string, Entry>>();
    for (const { rule, subject } of rules) {
      if (subject.kind === 'account') this.#accounts.set(subject.text, rule);
      else if (subject.kind === 'origin') this.#origins.set(subject.text, rule);
      else {
        const { ip, prefix } = subject.cidr;
        if (ip.v === 4) {
          const nets = v4.get(prefix) ?? new Map<number, Entry>();
          nets.set(v4Net(ip.n, prefix), rule);
          v4.set(prefix, nets);
        } else {
          const nets = v6.get(prefix) ?? new Map<string, Entry>();
          nets.set(v6Net(ip.g, prefix), rule);
          v6.set(prefix, nets);
        }
      }
    }
    for (const [prefix, nets] of v4) this.#v4.push({ prefix, nets });
    for (const [prefix, nets] of v6) this.#v6.push({ prefix, nets });
    this.#v4.sort((a, b) => b.prefix - a.prefix);
    this.#v6.sort((a, b) => b.prefix - a.prefix);
    this.size = rules.length;
  }

  /**
   * The rule that decides `q` at `now`, or undefined. Within a kind the most specific rule
   * decides (a /32 allowed inside a /8 denied is allowed); across kinds a deny beats an allow, so
   * an allowed office network does not let a denied account in. An IPv6 address that carries an
   * IPv4 one (NAT64, 6to4, Teredo) also meets that IPv4 address's rules.
   */
  match(q: AccessQuery, now: number): AccessRule | undefined {
    if (this.size === 0) return undefined;
    let allowed: AccessRule | undefined;
    const consider = (e: AccessRule | undefined): AccessRule | undefined => {
      if (e === undefined) return undefined;
      if (e.action === 'deny') return e;
      allowed ??= e;
      return undefined;
    };
    const ip = q.ip;
    if (ip !== undefined) {
      const carried = ip.v === 6 ? embeddedV4(ip.g) : ip.n;
      if (carried !== undefined) {
        const denied = consider(this.#v4Match(carried, now));
        if (denied !== undefined) return denied;
      }
      if (ip.v === 6) {
        const denied = consider(this.#v6Match(ip.g, now));
        if (denied !== undefined) return denied;
      }
    }
    if (q.account !== undefined && this.#accounts.size > 0) {
      const denied = consider(live(this.#accounts.get(`account:${q.account}`), now));
      if (denied !== undefined) return denied;
    }
    if (q.origin !== undefined && this.#origins.size > 0) {
      const denied = consider(live(this.#origins.get(originText(q.origin)), now));
      if (denied !== undefined) return denied;
    }
    return allowed;
  }

  #v4Match(n: number, now: number): Entry | undefined {
    for (const { prefix, nets } of this.#v4) {
      const e = live(nets.get(v4Net(n, prefix)), now);
      if (e !== undefined) return e;
    }
    return undefined;
  }

  #v6Match(g: readonly number[], now: number): Entry | undefined {
    for (const { prefix, nets } of this.#v6) {
      const e = live(nets.get(v6Net(g, prefix)), now);
      if (e !== undefined) return e;
    }
    return undefined;
  }
}

/** `origin:` and the origin as a rule spells it (the one normalisation every origin key gets). */
function originText(raw: string): string {
  return `origin:${normalizeOrigin(raw).slice('browser-origin:'.length)}`;
}
