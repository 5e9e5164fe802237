import { type Clock, systemClock, systemTimers, type TimerHandle, type Timers } from '../clock.js';
import { PortcullisConfigError } from '../errors.js';
import type { Logger } from '../events.js';
import { parseIp } from '../ip.js';
import { MemoryStore } from '../memory-store.js';
import { duration, integer, MAX_DURATION_MS, parseOptions, withMethods } from '../options.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { safeLogger } from '../safe-call.js';
import type { AccessListing, Store } from '../store.js';
import { type AccessAction, AccessMatcher, type AccessQuery, type AccessRule } from './matcher.js';
import {
  ACCESS_RULE_ERROR,
  accessReason,
  accessSubject,
  type AccessSubject,
  type AccessSubjectInput,
  storedSubject,
} from './subject.js';

/** Options of {@link createAccessList}. */
export interface AccessListOptions {
  /**
   * Where the rules live: a `MemoryStore` (one process), or a `RedisStore` so that every process
   * sharing it enforces the same rules. @default a new MemoryStore
   */
  store?: Store;
  /** Names the list in the store (several lists can share one store) and in log lines. @default 'default' */
  name?: string;
  /** Most rules in force at once; setting one more is refused. @default 10_000 */
  maxRules?: number;
  /**
   * How often the rules are read again from the store. A change made through a store that tells
   * of changes (`MemoryStore`, `RedisStore` with `subscribe`) arrives at once; this bounds how
   * late one arrives otherwise (another process without a subscription, a lost message).
   * @default 10_000
   */
  refreshMs?: number;
  /** Time source for the rules' ends. @default systemClock */
  clock?: Clock;
  /** Timers for the refresh. @default systemTimers */
  timers?: Timers;
  /**
   * Receives a warning per denied subject (at most one a minute each, with the count) and an error
   * when the store cannot be read (the rules last read stay in force). @default none
   */
  logger?: Logger;
}

/** What {@link AccessList.allow} and {@link AccessList.deny} take besides the subject. */
export interface AccessRuleOptions {
  /** Why: shown in the refusal and the log line (at most 200 characters). */
  reason?: string;
  /** How long the rule lasts (1 ms to 10 years); left out, until it is removed. */
  ms?: number;
}

/**
 * Allow and deny rules by IP address or network, account and origin (docs/design.md#access-lists),
 * changed at run time and shared through the store. Every request is matched against a copy held
 * in this process, so a deny costs no round trip; a change reaches the copy at once through the
 * store's notifications, or within `refreshMs`.
 */
export interface AccessList {
  /** The list's name. */
  readonly name: string;
  /** The store the rules live in. */
  readonly store: Store;
  /** Sets an allow rule: a matching request is not limited (the auth guard still counts guesses). */
  allow(subject: AccessSubjectInput, options?: AccessRuleOptions): Promise<AccessRule>;
  /** Sets a deny rule: a matching request is refused with 403 `ACCESS_DENIED` and the reason. */
  deny(subject: AccessSubjectInput, options?: AccessRuleOptions): Promise<AccessRule>;
  /** Removes the rule of `subject`; false when it had none. */
  remove(subject: AccessSubjectInput): Promise<boolean>;
  /** The rules in force, read from the store: denies first, then by subject. */
  rules(): Promise<AccessRule[]>;
  /**
   * The rule deciding a request from `ip` (any spelling), acting for `account`, sent with `origin`
   * (the raw header): undefined when none does. Answered from this process's copy.
   */
  check(query: { ip?: string; account?: string; origin?: string }): AccessRule | undefined;
  /** Resolves once the rules were read from the store for the first time (or that failed). */
  ready(): Promise<void>;
  /** Reads the rules from the store again now. */
  refresh(): Promise<void>;
  /** Stops the refresh and the notifications; closes the store it built. */
  close(): MaybePromise<void>;
}

const accessListSpec = {
  store: withMethods<Store>('accessRules', 'putAccessRule', 'removeAccessRule'),
  name: (v: unknown, fail: (e: string) => never) =>
    typeof v === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(v)
      ? v
      : fail('a token of 1–64 letters, digits, "_", "." or "-"'),
  maxRules: integer(1, 1_000_000),
  refreshMs: duration(100),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
  logger: withMethods<Logger>('warn', 'error'),
};

/** How often one subject's denials are logged. */
const LOG_EVERY_MS = 60_000;

/** The internal face the gates use: the parsed-address match, a promise only before the first read. */
export interface AccessMatch {
  match(q: AccessQuery): MaybePromise<AccessRule | undefined>;
  /** Logs a denial (at most once a minute per subject). */
  denied(rule: AccessRule, where: string): void;
  /** The list's clock, which the rules' `until` is on. */
  now(): number;
}

const lists = new WeakMap<AccessList, AccessMatch>();

/** The matcher behind `list`, for the gates; undefined for an object that is no access list. */
export function accessMatchOf(list: unknown): AccessMatch | undefined {
  return typeof list === 'object' && list !== null ? lists.get(list as AccessList) : undefined;
}

/**
 * An access list (docs/design.md#access-lists): pass it as `access` to `rateLimit`, `concurrency`
 * or `authGuard` of any adapter; manage it here, with the `portcullis` CLI or an admin RPC.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function createAccessList(options?: AccessListOptions): AccessList {
  const o = parseOptions(options, accessListSpec, 'createAccessList');
  const name = o.name ?? 'default';
  const clock = o.clock ?? systemClock;
  const timers = o.timers ?? systemTimers;
  const maxRules = o.maxRules ?? 10_000;
  const refreshMs = o.refreshMs ?? 10_000;
  const logger = safeLogger(o.logger);
  const own = o.store === undefined ? new MemoryStore({ clock }) : undefined;
  const store = (o.store ?? own) as Store &
    Required<Pick<Store, 'accessRules' | 'putAccessRule' | 'removeAccessRule'>>;

  let matcher = new AccessMatcher([]);
  let loaded: Promise<void> | undefined;
  let firstRead = false;
  let closed = false;
  let failing = false;
  /** Each read's number: a read that ends after a later one began does not replace its rules. */
  let reads = 0;
  let applied = 0;
  let timer: TimerHandle | undefined;
  const lastLogged = new Map<string, { at: number; count: number }>();

  function localRules(listing: AccessListing): Array<{ rule: AccessRule; subject: AccessSubject }> {
    const now = clock.now();
    const out: Array<{ rule: AccessRule; subject: AccessSubject }> = [];
    for (const r of listing.rules) {
      const subject = storedSubject(r.subject);
      if (subject === undefined || (r.action !== 'allow' && r.action !== 'deny')) continue;
      const left = r.until === 0 ? undefined : r.until - listing.now;
      if (left !== undefined && left <= 0) continue;
      out.push({
        subject,
        rule: Object.freeze({
          subject: subject.text,
          kind: subject.kind,
          action: r.action,
          reason: typeof r.reason === 'string' ? r.reason : '',
          until: left === undefined ? undefined : now + left,
        }),
      });
    }
    return out;
  }

  function apply(n: number, listing: AccessListing): void {
    if (n < applied) return;
    applied = n;
    matcher = new AccessMatcher(localRules(listing));
    if (failing) {
      failing = false;
      logger?.warn(
        { code: 'PORTCULLIS_ACCESS_READ_RECOVERED', list: name },
        `access list ${name}: read from the store again (${matcher.size} rules)`,
      );
    }
  }

  function failed(error: unknown): void {
    if (failing) return;
    failing = true;
    const text = error instanceof Error ? error.message : String(error);
    logger?.error(
      { code: 'PORTCULLIS_ACCESS_READ_FAILED', list: name, err: error },
      `access list ${name}: the store could not be read (${text}); the rules last read stay in force, read again in ${refreshMs} ms`,
    );
  }

  /** Reads the rules; synchronous for a synchronous store (the memory store). */
  function read(): MaybePromise<void> {
    if (closed) return undefined;
    const n = ++reads;
    let listing: MaybePromise<AccessListing>;
    try {
      listing = store.accessRules(name);
    } catch (error) {
      failed(error);
      return undefined;
    }
    if (!isPromise(listing)) {
      apply(n, listing);
      return undefined;
    }
    return listing.then(
      (l) => apply(n, l),
      (error: unknown) => failed(error),
    );
  }

  function schedule(): void {
    if (closed) return;
    timer = timers.setTimeout(() => {
      timer = undefined;
      const r = read();
      if (isPromise(r)) r.then(schedule, schedule);
      else schedule();
    }, refreshMs);
  }

  const first = read();
  if (isPromise(first)) {
    loaded = first.then(() => {
      firstRead = true;
    });
  } else firstRead = true;
  schedule();
  const unwatch = store.watchAccess?.(name, () => {
    const r = read();
    if (isPromise(r)) r.then(undefined, () => {});
  });

  const match = (q: AccessQuery): MaybePromise<AccessRule | undefined> =>
    firstRead || loaded === undefined
      ? matcher.match(q, clock.now())
      : loaded.then(() => matcher.match(q, clock.now()));

  function denied(rule: AccessRule, where: string): void {
    if (logger === undefined) return;
    const now = clock.now();
    const seen = lastLogged.get(rule.subject);
    if (seen !== undefined && now - seen.at < LOG_EVERY_MS) {
      seen.count++;
      return;
    }
    if (lastLogged.size >= maxRules) lastLogged.clear();
    const before = seen?.count ?? 0;
    lastLogged.set(rule.subject, { at: now, count: 0 });
    logger.warn(
      {
        code: 'PORTCULLIS_ACCESS_DENIED',
        list: name,
        subject: rule.subject,
        reason: rule.reason,
        where,
        ...(before > 0 && { alsoDenied: before }),
      },
      `access list ${name}: denied ${rule.subject} at ${where}${rule.reason === '' ? '' : ` (${rule.reason})`}${before > 0 ? `; ${before} more denied since the last line` : ''}`,
    );
  }

  async function put(
    action: AccessAction,
    input: AccessSubjectInput,
    ruleOptions: AccessRuleOptions | undefined,
  ): Promise<AccessRule> {
    const subject = accessSubject(input);
    const { reason, ms } = ruleOptionsOf(ruleOptions);
    const ok = await store.putAccessRule(
      name,
      { subject: subject.text, action, reason, ms },
      maxRules,
    );
    if (!ok)
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_MAX_RULES',
        'maxRules',
        `access list ${name}: ${maxRules} rules are in force (maxRules); remove one before adding ${subject.text}`,
      );
    await read();
    return Object.freeze({
      subject: subject.text,
      kind: subject.kind,
      action,
      reason,
      until: ms === 0 ? undefined : clock.now() + ms,
    });
  }

  const list: AccessList = {
    name,
    store,
    allow: (subject, opts) => put('allow', subject, opts),
    deny: (subject, opts) => put('deny', subject, opts),
    async remove(input) {
      const subject = accessSubject(input);
      const removed = await store.removeAccessRule(name, subject.text);
      await read();
      return removed;
    },
    async rules() {
      const listing = await store.accessRules(name);
      return localRules(listing)
        .map((r) => r.rule)
        .sort(
          (a, b) =>
            (a.action === b.action ? 0 : a.action === 'deny' ? -1 : 1) ||
            (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : 0),
        );
    },
    check(q) {
      const ip = typeof q?.ip === 'string' ? parseIp(q.ip.trim()) : undefined;
      return matcher.match({ ip, account: q?.account, origin: q?.origin }, clock.now());
    },
    ready: () => loaded ?? Promise.resolve(),
    async refresh() {
      await read();
    },
    close() {
      closed = true;
      if (timer !== undefined) timers.clearTimeout(timer);
      timer = undefined;
      unwatch?.();
      return own?.close();
    },
  };
  lists.set(list, { match, denied, now: () => clock.now() });
  return list;
}

function ruleOptionsOf(value: AccessRuleOptions | undefined): { reason: string; ms: number } {
  if (value === undefined) return { reason: '', ms: 0 };
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new PortcullisConfigError(
      ACCESS_RULE_ERROR,
      'options',
      'access list: rule options must be an object ({ reason, ms })',
    );
  for (const k of Object.keys(value))
    if (k !== 'reason' && k !== 'ms')
      throw new PortcullisConfigError(
        ACCESS_RULE_ERROR,
        k,
        `access list: unknown rule option "${k.slice(0, 64)}" (expected reason, ms)`,
      );
  const ms = value.ms;
  if (
    ms !== undefined &&
    (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_DURATION_MS)
  )
    throw new PortcullisConfigError(
      ACCESS_RULE_ERROR,
      'ms',
      `access list: ms must be an integer from 1 to ${MAX_DURATION_MS} (10 years), or left out for a rule that lasts until removed`,
    );
  return { reason: accessReason(value.reason), ms: ms ?? 0 };
}
