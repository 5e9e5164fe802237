import { type Decision, decision, withKey } from './decision.js';
import type { Subject } from './failure-limiter.js';
import { type FailureSetup, failureRule } from './failure-options.js';
import type { FailureReports } from './failure-reports.js';
import { parseIp, parsedIsLoopback, subnetKey } from './ip.js';
import { boundedKey } from './keys.js';
import { type FailureTable, MemoryStore } from './memory-store.js';
import { type MaybePromise, mapMaybe } from './promise.js';
import type { FailureDecision, FailureRule, Store } from './store.js';

/** The key a subject is counted under, and whether it is exempt (nothing counted). */
export interface ResolvedSubject {
  key: string;
  exempt: boolean;
}

/** Decisions of `recordFailure` that refused without counting (see {@link refusedUncounted}). */
const uncounted = new WeakSet<Decision>();

/**
 * True when `d`, returned by a failure limiter's `recordFailure`, refused the failure without
 * counting it: a lockout was already in force (started by a concurrent request between `check` and
 * `recordFailure`, which a shared asynchronous store allows) or the store is full of lockouts. The
 * auth gate answers such an attempt like a refused `check`. False for the failure that started the
 * lockout, and for any decision this module did not make.
 */
export function refusedUncounted(d: Decision): boolean {
  return uncounted.has(d);
}

/**
 * A failure limiter's per-key state ops: which key a subject is counted under, where that key
 * lives (a private memory table per scope, or `<name>:<scope>:<subject>` in a shared store), and
 * the store calls that check, count and forget it. What the answers mean to the world is
 * {@link FailureReports}'.
 */
export class FailureKeys {
  /** The rule every store call takes; `reconfigure` replaces it. */
  rule: FailureRule;
  readonly setup: FailureSetup;
  readonly store: Store;
  readonly reports: FailureReports;
  /**
   * A private memory store, or one no other code reads key by key (`setup.tabled`), keeps each
   * scope in a table of its own, addressed by the subject alone: a table named `<name>:<scope>`
   * holds what `<name>:<scope>:<subject>` keys would, listed the same, without a key string built
   * and hashed per call.
   */
  readonly #memory: MemoryStore | undefined;
  // The scope met last and its table: most limiters use one scope, so most calls skip the lookup.
  #lastScope = '';
  #lastTable: FailureTable | undefined;

  /** @param setup the resolved options; @param reports where decisions are reported */
  constructor(setup: FailureSetup, reports: FailureReports) {
    this.setup = setup;
    this.store = setup.store;
    this.reports = reports;
    this.rule = failureRule(setup.config, setup.escalate);
    this.#memory =
      setup.store instanceof MemoryStore && (setup.own || setup.tabled) ? setup.store : undefined;
  }

  /** The key and exemption `subject` is counted under (what every decision's `key` shows). */
  subjectOf(subject: Subject): ResolvedSubject {
    const raw = typeof subject === 'string' ? subject : subject?.key;
    if (typeof raw !== 'string')
      throw new TypeError('Portcullis: a subject is a string or { key, exempt }');
    // A layer limiter's subjects are keys already (a client's canonical key, an account's): no IP.
    if (this.setup.earned !== 'client') return { key: boundedKey(raw), exempt: false };
    const ip = parseIp(raw);
    if (ip === undefined) return { key: raw === '' ? 'unknown' : boundedKey(raw), exempt: false };
    const vouched = typeof subject === 'string' || subject.exempt === true;
    const { config } = this.setup;
    return {
      key: subnetKey(ip, config.ipv6Subnet),
      exempt: config.exemptLoopback && vouched && parsedIsLoopback(ip),
    };
  }

  /** The table of `scope` in a private memory store (undefined: key by {@link storeKey}).
   * @internal
   */
  tableOf(scope: string): FailureTable | undefined {
    if (this.#memory === undefined) return undefined;
    if (scope !== this.#lastScope) {
      this.#lastTable = this.#memory.failureTable(this.setup.namespace + scope);
      this.#lastScope = scope;
    }
    return this.#lastTable;
  }

  /** The key of `key` in `scope` in the store: after the namespace, `<scope>:<subject>`. */
  storeKey(scope: string, key: string): string {
    return `${this.setup.namespace}${scope}:${key}`;
  }

  /** The answer for an exempt subject: allowed, nothing counted. */
  exempt(key: string): Decision {
    const m = this.rule.maxAttempts;
    return this.reports.dry(decision(true, 'exempt', m, m, 0, 0, key));
  }

  /*
   * Each call's way through a shared store is a method of its own: a closure over a call's
   * arguments makes V8 allocate their context on entry to the call, so a table's answer (the
   * common way) would pay for the store's closure too (bench/NOTES.md).
   */
  check(s: ResolvedSubject, sc: string): MaybePromise<Decision> {
    if (s.exempt) return this.reports.decided(sc, this.exempt(s.key));
    const t = this.tableOf(sc);
    if (t !== undefined) return this.checked(sc, s.key, t.checkFailures(s.key, this.rule));
    return this.#checkStore(s.key, sc);
  }

  #checkStore(key: string, sc: string): MaybePromise<Decision> {
    const d = this.store.checkFailures(this.storeKey(sc, key), this.rule);
    return mapMaybe(d, (r) => this.checked(sc, key, r));
  }

  recordFailure(s: ResolvedSubject, sc: string): MaybePromise<Decision> {
    if (s.exempt) return this.exempt(s.key);
    const t = this.tableOf(sc);
    if (t !== undefined) return this.afterFailure(sc, s.key, t.recordFailure(s.key, this.rule));
    return this.#failStore(s.key, sc);
  }

  #failStore(key: string, sc: string): MaybePromise<Decision> {
    const d = this.store.recordFailure(this.storeKey(sc, key), this.rule);
    return mapMaybe(d, (r) => this.afterFailure(sc, key, r));
  }

  /**
   * A correct credential: one atomic store call forgets the failure history, unless a lockout is in
   * force (a concurrent failure may have started it after `check`): then the lockout stays and the
   * locked decision is returned, which the caller must refuse like any attempt during a lockout.
   */
  recordSuccess(s: ResolvedSubject, sc: string): MaybePromise<Decision> {
    if (s.exempt) return this.exempt(s.key);
    const t = this.tableOf(sc);
    if (t !== undefined) return this.reports.finish(sc, s.key, t.recordSuccess(s.key, this.rule));
    return this.#succeedStore(s.key, sc);
  }

  #succeedStore(key: string, sc: string): MaybePromise<Decision> {
    const d = this.store.recordSuccess(this.storeKey(sc, key), this.rule);
    return mapMaybe(d, (r) => this.reports.finish(sc, key, r));
  }

  recordDistinct(s: ResolvedSubject, member: string, sc: string): MaybePromise<Decision> {
    if (s.exempt) return this.exempt(s.key);
    const t = this.tableOf(sc);
    if (t !== undefined)
      return this.afterFailure(sc, s.key, t.recordDistinct(s.key, member, this.rule));
    return this.#distinctStore(s.key, member, sc);
  }

  #distinctStore(key: string, member: string, sc: string): MaybePromise<Decision> {
    const d = this.distinctOf().call(this.store, this.storeKey(sc, key), member, this.rule);
    return mapMaybe(d, (r) => this.afterFailure(sc, key, r));
  }

  /** The store's `recordDistinct`, which the spray layer needs. @throws {TypeError} without one */
  distinctOf(): NonNullable<Store['recordDistinct']> {
    if (typeof this.store.recordDistinct !== 'function')
      throw new TypeError(
        'Portcullis: this store cannot count distinct failures (no Store.recordDistinct)',
      );
    return this.store.recordDistinct;
  }

  /** A check's answer as the limiter's decision (every attempt left proves the key new). */
  checked(sc: string, key: string, d: Decision): Decision {
    return this.reports.decided(sc, this.reports.finish(sc, key, d, this.rule.maxAttempts));
  }

  /** A counted failure's answer as the limiter's decision: a lockout it started is reported. */
  afterFailure(scope: string, key: string, d: FailureDecision): Decision {
    if (d.lockoutStarted) {
      const { lockoutStarted: _, ...plain } = d;
      const out = withKey(plain, key);
      // An escalated lockout lasts longer than the rule's: the decision says how long.
      const lockoutMs =
        this.setup.escalate === undefined ? this.rule.lockoutMs : plain.retryAfterMs;
      this.reports.earned(scope, key, out, lockoutMs);
      return this.reports.finish(scope, key, out);
    }
    const out = this.reports.finish(scope, key, d, this.rule.maxAttempts - 1);
    if (!out.allowed && (out.reason === 'locked' || out.reason === 'overflow')) uncounted.add(out);
    return out;
  }

  /** Forgets `s`'s failures and lockout in `sc`; answers the fresh state once the store has. */
  reset(s: ResolvedSubject, sc: string): MaybePromise<Decision> {
    const m = this.rule.maxAttempts;
    const fresh = decision(true, s.exempt ? 'exempt' : 'allowed', m, m, 0, 0, s.key);
    const t = this.tableOf(sc);
    const gone = t === undefined ? this.store.delete(this.storeKey(sc, s.key)) : t.delete(s.key);
    return mapMaybe(gone, () => {
      const out = this.reports.dry(fresh);
      this.reports.reset(sc, out);
      return out;
    });
  }
}
