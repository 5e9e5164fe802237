import { callSafely, safeLogger } from './safe-call.js';
import type { Clock, Timers } from './clock.js';
import { type MaybePromise, mapMaybe } from './promise.js';
import { asDryRun, type Decision, decision, withKey } from './decision.js';
import { channels, type Logger, publishDecided, publishDecision } from './events.js';
import { parseIp, parsedIsLoopback, subnetKey } from './ip.js';
import { boundedKey } from './keys.js';
import { claimName, limiterStore, restampStore } from './limiter-store.js';
import { type FailureTable, MemoryStore } from './memory-store.js';
import {
  boolean,
  duration,
  either,
  integer,
  nonEmptyString,
  objectOption,
  type OptionCheck,
  oneOf,
  parseOptions,
  required,
  timerDelay,
  withMethods,
} from './options.js';
import type { EscalateRule, FailureDecision, FailureRule, Store } from './store.js';
import { type Step, StoreStep } from './store-batch.js';
import { type Warnings, warningsOption } from './warnings.js';

/**
 * Who failed: a client IP, an opaque key (`browser-origin:…`, `identity:…`), or the
 * `{ key, exempt }` pair that `authSubject` builds from a resolved client.
 */
export type Subject = string | { readonly key: string; readonly exempt?: boolean };

/** Options of {@link createFailureLimiter}. */
export interface FailureLimiterOptions {
  /** Failures within `windowMs` that start a lockout. @default 10 */
  maxAttempts?: number;
  /** Sliding window over which failures count. @default 60_000 */
  windowMs?: number;
  /** How long a lockout lasts. @default 300_000 */
  lockoutMs?: number;
  /** Exempt loopback subjects (only clean direct-local ones: see `authSubject`). @default true */
  exemptLoopback?: boolean;
  /** IPv6 clients are keyed by this network prefix; `false` keys the full address. @default 64 */
  ipv6Subnet?: number | false;
  /** Most keys in the built-in memory store (not allowed together with `store`). @default 10_000 */
  maxEntries?: number;
  /** Where state lives. @default a new MemoryStore */
  store?: Store;
  /** Time source for the built-in store. @default systemClock */
  clock?: Clock;
  /** Timers for the built-in store's sweep. @default systemTimers */
  timers?: Timers;
  /** Receives one `AUTH_RATE_LIMITED` warning per lockout. */
  logger?: Logger;
  /** Count, log and publish as usual, but never refuse. @default false */
  dryRun?: boolean;
  /** Names the limiter in events and namespaces its keys in a shared store. @default 'auth' */
  name?: string;
  /**
   * Repeated lockouts of one subject grow: a lockout that starts within `maxLockoutMs` of the end
   * of the subject's previous one lasts `factor` times as long as that one, at most `maxLockoutMs`;
   * a success (or reset) of the subject starts again from `lockoutMs`. `false`: every lockout
   * lasts `lockoutMs`.
   * @default false
   */
  escalate?: EscalateOptions | false;
  /**
   * Misconfiguration warnings switched off, by code (`{ PORTCULLIS_NAME_CLASH: false }`).
   * @default every warning on
   */
  warnings?: Warnings;
}

/** Options of a failure limiter's `escalate` (docs/design.md#defence-in-depth). */
export interface EscalateOptions {
  /** How much longer each repeated lockout lasts: an integer from 1 to 1000. @default 2 */
  factor?: number;
  /** The longest lockout, and how long after a lockout's end the next one still escalates. @default 86_400_000 (a day) */
  maxLockoutMs?: number;
}

/** Which layer of the auth defences a lockout belongs to (docs/design.md#defence-in-depth). */
export type AuthLayer = NonNullable<Decision['layer']>;

/**
 * A failure limiter: counts wrong credentials per scope and subject, locks out brute force.
 * `D` is `Decision` for the in-memory store (answers are synchronous) and `MaybePromise<Decision>`
 * for a store that may answer later.
 */
export interface FailureLimiter<D extends MaybePromise<Decision> = MaybePromise<Decision>> {
  /** The state of `subject` in `scope`, counting nothing (run it before comparing credentials). */
  check(subject: Subject, scope?: string): D;
  /** Counts one failure; the decision after counting (the failure that reaches the max locks). */
  recordFailure(subject: Subject, scope?: string): D;
  /**
   * A correct credential: forgets `subject`'s failures in `scope` and answers allowed, unless a
   * lockout is in force: then the lockout stays and the locked decision comes back (refuse it like
   * any attempt during a lockout). Unlike `reset`, it never lifts a lockout.
   */
  recordSuccess(subject: Subject, scope?: string): D;
  /** Forgets `subject`'s failures and lockout in `scope`. */
  reset(subject: Subject, scope?: string): D;
  /**
   * Changes the numbers in force without a restart. History and earned lockouts are kept. A
   * lowered `maxAttempts` applies at once: a subject already at or over it is locked from its next
   * call, with the new `lockoutMs`. Raising a number never releases an earned lockout; a lowered
   * `lockoutMs` caps a lockout in force at the new length (no wait ever exceeds `lockoutMs`).
   * `config` shows the new values.
   * @throws {PortcullisConfigError} for a wrong or unknown option
   */
  reconfigure(partial: FailureLimiterReconfig): void;
  /**
   * The lockouts in force (earned, or set by hand with `ban`), soonest end first: who is locked
   * out and why. On a shared store it reads the index the store keeps (never a scan).
   * @throws {PortcullisConfigError} for a wrong option; a `TypeError` when the store cannot list
   */
  lockouts(
    options?: LockoutsOptions,
  ): [D] extends [Decision] ? LockoutInfo[] : MaybePromise<LockoutInfo[]>;
  /**
   * Locks `subject` out by hand for `ms` (an operator's ban): refused with the same answer as an
   * earned lockout, listed with `layer: 'ban'`, lifted by `reset`. It lasts its own `ms`, not
   * capped by `lockoutMs`, and never shortens a lockout in force that ends later. A loopback-exempt
   * subject stays exempt (answered `exempt`, nothing stored).
   * @throws {PortcullisConfigError} for a wrong option; a `TypeError` when the store cannot ban
   */
  ban(subject: Subject, options: BanOptions): D;
  /** Keys held by the store. */
  size(): MaybePromise<number>;
  /** Stops the store's timer (and closes a store the limiter created). */
  close(): MaybePromise<void>;
  /** The resolved numbers in force. */
  readonly config: Readonly<
    Required<
      Pick<
        FailureLimiterOptions,
        'maxAttempts' | 'windowMs' | 'lockoutMs' | 'exemptLoopback' | 'dryRun' | 'name'
      >
    > & { ipv6Subnet: number | false }
  >;
  /** The store in use. */
  readonly store: Store;
  /** The logger lockouts are reported to, if any (a gate's browser limiter shares it). */
  readonly logger: Logger | undefined;
  /**
   * Counts a failure of `subject` against `member`, where only distinct members count (the spray
   * layer: distinct accounts one client failed against). Needs `Store.recordDistinct`.
   * @internal
   */
  recordDistinct(subject: Subject, member: string, scope?: string): D;
  /** The escalation in force, if any. @internal */
  readonly escalate: EscalateRule | undefined;
  /** The key and exemption `subject` is counted under (what every decision's `key` shows). @internal */
  keyOf(subject: Subject): { readonly key: string; readonly exempt: boolean };
  /**
   * Calls `listener` for every lockout this limiter starts (earned, or a ban); returns the function
   * that stops it. A throwing listener is reported to the logger, never to the caller.
   * @internal for the gates' `onLockout`
   */
  watchLockouts(listener: (started: StartedLockout) => void): () => void;
}

/** A lockout a limiter started, as {@link FailureLimiter.watchLockouts} reports it. @internal */
export interface StartedLockout {
  readonly layer: AuthLayer;
  readonly scope: string;
  readonly key: string;
  readonly lockoutMs: number;
  readonly retryAfterMs: number;
}

/** A lockout in force, as {@link FailureLimiter.lockouts} lists it. */
export interface LockoutInfo {
  /** The credential class (`'default'` when none was given). */
  readonly scope: string;
  /** The subject's key: a canonical IP (IPv6 by its subnet), `browser-origin:…`, `identity:…`. */
  readonly key: string;
  /**
   * `'client'`: earned by failures; `'ban'`: set by hand with `ban`; an auth gate's layers list
   * theirs as `'pair'`, `'account'`, `'scope'` or `'spray'` (docs/design.md#defence-in-depth).
   */
  readonly layer: AuthLayer;
  /** When it ends, in the store's clock (ms since the epoch for the system clock and Redis). */
  readonly until: number;
  /** How long it still lasts. */
  readonly retryAfterMs: number;
}

/** Options of {@link FailureLimiter.lockouts}. */
export interface LockoutsOptions {
  /** Only this scope. @default every scope */
  scope?: string;
  /** Most lockouts listed (the soonest to end). @default 1000 */
  limit?: number;
}

/** Options of {@link FailureLimiter.ban}. */
export interface BanOptions {
  /** The scope to ban the subject in. @default 'default' */
  scope?: string;
  /** How long the ban lasts: 1 to 2^31 − 1 ms. */
  ms: number;
}

const lockoutsSpec = {
  scope: (value: unknown, fail: (expected: string) => never) =>
    typeof value === 'string' ? value : fail('a string'),
  limit: integer(1, 100_000),
};

const banSpec = {
  scope: lockoutsSpec.scope,
  ms: timerDelay(1),
};

/** What {@link FailureLimiter.reconfigure} may change. */
export type FailureLimiterReconfig = Partial<
  Pick<
    FailureLimiterOptions,
    'maxAttempts' | 'windowMs' | 'lockoutMs' | 'exemptLoopback' | 'dryRun'
  >
>;

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

/** The options of {@link createFailureLimiter}, checked the same way wherever they are accepted (gates take them flat). */
export const failureLimiterSpec = {
  maxAttempts: integer(1),
  windowMs: duration(1),
  lockoutMs: duration(1),
  exemptLoopback: boolean,
  ipv6Subnet: either(integer(1, 128), oneOf([false]), 'an integer from 1 to 128 or false'),
  maxEntries: integer(1),
  store: withMethods<Store>('checkFailures', 'recordFailure', 'recordSuccess', 'delete'),
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
  logger: withMethods<Logger>('warn', 'error'),
  dryRun: boolean,
  name: nonEmptyString,
  warnings: warningsOption,
  escalate: either(
    oneOf([false]),
    (value: unknown, fail: (expected: string) => never) =>
      parseOptions(objectOption<EscalateOptions>(value, fail), escalateSpec, 'escalate'),
    'false or { factor, maxLockoutMs }',
  ),
};

const escalateSpec = {
  // An integer: lockoutMs · factor^step is then exact in every store (a fractional power differs
  // by an ulp between JavaScript and Redis' Lua, and a fractional length between their replies).
  factor: integer(1, 1000),
  maxLockoutMs: duration(1),
};

/** The store rule of an `escalate` option (undefined: no escalation). */
export function escalateRule(e: EscalateOptions | false | undefined): EscalateRule | undefined {
  if (e === undefined || e === false) return undefined;
  return { factor: e.factor ?? 2, maxLockoutMs: e.maxLockoutMs ?? 86_400_000 };
}

const failureReconfigureSpec = {
  maxAttempts: failureLimiterSpec.maxAttempts,
  windowMs: failureLimiterSpec.windowMs,
  lockoutMs: failureLimiterSpec.lockoutMs,
  exemptLoopback: failureLimiterSpec.exemptLoopback,
  dryRun: failureLimiterSpec.dryRun,
};

interface ResolvedSubject {
  key: string;
  exempt: boolean;
}

/** Normalises a blank or missing scope to `'default'`. */
export function normalizeScope(scope: unknown): string {
  if (scope === undefined || scope === null) return 'default';
  if (typeof scope !== 'string')
    throw new TypeError(`Portcullis: scope must be a string, got ${typeof scope}`);
  return scope.trim() === '' ? 'default' : boundedKey(scope);
}

/**
 * Checks a `limiter` option: a failure limiter made by {@link createFailureLimiter} (its `config`
 * and `store` are read by the gates, so a look-alike with the three methods is not enough).
 */
export const failureLimiterOption: OptionCheck<FailureLimiter> = (value, fail) => {
  const expected = 'a limiter from createFailureLimiter()';
  const v = value as Partial<FailureLimiter> | null;
  if (v === null || typeof v !== 'object') return fail(expected);
  const methods = [v.check, v.recordFailure, v.recordSuccess];
  if (
    methods.some((m) => typeof m !== 'function') ||
    typeof v.config !== 'object' ||
    typeof v.store !== 'object'
  ) {
    return fail(expected);
  }
  return v as FailureLimiter;
};

/**
 * Creates a failure limiter (docs/design.md#failure-limiter): a sliding log of failure times per `scope:subject`, a
 * lockout when `maxAttempts` failures fall within `windowMs`, scopes independent of each other.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function createFailureLimiter(
  options?: FailureLimiterOptions & { store?: MemoryStore },
): FailureLimiter<Decision>;
/** With a store that may answer asynchronously (e.g. Redis), decisions may be promises. */
export function createFailureLimiter(options?: FailureLimiterOptions): FailureLimiter;
export function createFailureLimiter(options?: FailureLimiterOptions): FailureLimiter {
  return buildFailureLimiter(options, 'client');
}

/**
 * A failure limiter of an auth gate's layer (docs/design.md#defence-in-depth): its subjects are
 * keys already (no IP parsing, no exemption) and its earned lockouts are listed, logged and
 * published as `layer`'s. Not an option: a client limiter that took it would stop reading IPs.
 * @internal
 */
export function createLayerLimiter(
  options: FailureLimiterOptions,
  layer: Exclude<AuthLayer, 'client' | 'ban'>,
): FailureLimiter {
  return buildFailureLimiter(options, layer);
}

function buildFailureLimiter(
  options: FailureLimiterOptions | undefined,
  earned: Exclude<AuthLayer, 'ban'>,
): FailureLimiter {
  const o = parseOptions(options, failureLimiterSpec, 'createFailureLimiter');
  const config = {
    maxAttempts: o.maxAttempts ?? 10,
    windowMs: o.windowMs ?? 60_000,
    lockoutMs: o.lockoutMs ?? 300_000,
    exemptLoopback: o.exemptLoopback ?? true,
    ipv6Subnet: (o.ipv6Subnet ?? 64) as number | false,
    dryRun: o.dryRun ?? false,
    name: o.name ?? 'auth',
  };
  const escalate = escalateRule(o.escalate as EscalateOptions | false | undefined);
  let rule: FailureRule = {
    maxAttempts: config.maxAttempts,
    windowMs: config.windowMs,
    lockoutMs: config.lockoutMs,
    ...(escalate !== undefined && { escalate }),
  };
  // A private store needs no namespace; a shared one gets the limiter's name in every key.
  const { store, own: ownStore, namespace } = limiterStore(o, config.name, 'createFailureLimiter');
  const logger = safeLogger(o.logger);
  if (!ownStore)
    claimName(
      store,
      config.name,
      `${rule.maxAttempts} failures per ${rule.windowMs} ms, ${rule.lockoutMs} ms lockout`,
      logger,
      o.warnings,
    );

  const listeners = new Set<(started: StartedLockout) => void>();
  function started(layer: AuthLayer, scope: string, key: string, lockoutMs: number, d: Decision) {
    for (const listener of listeners)
      callSafely(
        listener,
        [{ layer, scope, key, lockoutMs, retryAfterMs: d.retryAfterMs }],
        (error) =>
          logger?.error(
            { code: 'PORTCULLIS_HOOK_ERROR', hook: 'onLockout', limiter: config.name, error },
            'Portcullis: onLockout threw; the lockout stands',
          ),
      );
  }

  function subjectOf(subject: Subject): ResolvedSubject {
    const raw = typeof subject === 'string' ? subject : subject?.key;
    if (typeof raw !== 'string')
      throw new TypeError('Portcullis: a subject is a string or { key, exempt }');
    // A layer limiter's subjects are keys already (a client's canonical key, an account's): no IP.
    if (earned !== 'client') return { key: boundedKey(raw), exempt: false };
    const ip = parseIp(raw);
    if (ip === undefined) return { key: raw === '' ? 'unknown' : boundedKey(raw), exempt: false };
    const vouched = typeof subject === 'string' || subject.exempt === true;
    return {
      key: subnetKey(ip, config.ipv6Subnet),
      exempt: config.exemptLoopback && vouched && parsedIsLoopback(ip),
    };
  }

  // A private memory store keeps each scope in a table of its own, addressed by the subject alone.
  const memory = ownStore && store instanceof MemoryStore ? store : undefined;

  // The scope met last and its table: most limiters use one scope, so most calls skip the lookup.
  let lastScope = '';
  let lastTable: FailureTable | undefined;

  /** The table of `scope` in a private memory store (undefined: key by `<scope>:<subject>`). */
  function tableOf(scope: string): FailureTable | undefined {
    if (memory === undefined) return undefined;
    if (scope !== lastScope) {
      lastTable = memory.failureTable(scope);
      lastScope = scope;
    }
    return lastTable;
  }

  function exemptDecision(key: string): Decision {
    const d = decision(true, 'exempt', rule.maxAttempts, rule.maxAttempts, 0, 0, key);
    return config.dryRun ? asDryRun(d) : d;
  }

  /*
   * One warning per episode of a store full of lockouts, not one per refused request. The episode
   * ends only when the store is seen to take a new key again: an allowed answer for a key that
   * holds no failure (a check with every attempt left, a first failure counted). Any other answer
   * says nothing about room: a locked client between two new ones must not end the episode, or
   * alternating them logs once per request.
   */
  let overflowing = false;

  /**
   * `fresh`: the `remaining` of an allowed answer that proves the key was new to the store
   * (`maxAttempts` for a check, one less for a counted failure; -1 when no answer proves it).
   */
  function finish(scope: string, key: string, d: Decision, fresh = -1): Decision {
    const out = withKey(d, key);
    if (out.reason !== 'allowed' && out.reason !== 'locked')
      publishDecision(config.name, scope, out);
    if (out.reason === 'overflow') {
      if (!overflowing) {
        overflowing = true;
        logger?.warn(
          { code: 'PORTCULLIS_OVERFLOW', limiter: config.name, scope, key },
          `Portcullis: limiter "${config.name}" is full of lockouts and refuses new keys (reason 'overflow'); further overflows are published on portcullis:overflow until the store takes a new key`,
        );
      }
    } else if (overflowing && out.reason === 'allowed' && out.remaining === fresh) {
      overflowing = false;
    }
    return config.dryRun ? asDryRun(out) : out;
  }

  function afterFailure(scope: string, key: string, d: FailureDecision): Decision {
    if (d.lockoutStarted) {
      const { lockoutStarted: _, ...plain } = d;
      const out = withKey(plain, key);
      // An escalated lockout lasts longer than the rule's: the decision says how long.
      const lockoutMs = escalate === undefined ? rule.lockoutMs : plain.retryAfterMs;
      logger?.warn(
        {
          code: 'AUTH_RATE_LIMITED',
          limiter: config.name,
          scope,
          key,
          ...(earned !== 'client' && { layer: earned }),
          lockoutMs,
          dryRun: config.dryRun,
        },
        `AUTH_RATE_LIMITED: ${rule.maxAttempts} failed attempts${earned === 'client' ? '' : ` (${earned} layer)`}; locking out scope=${scope} key=${key} for ${lockoutMs}ms${config.dryRun ? ' (dry run)' : ''}`,
      );
      if (channels.lockout.hasSubscribers)
        channels.lockout.publish({
          limiter: config.name,
          scope,
          decision: out,
          ...(earned !== 'client' && { layer: earned }),
        });
      if (listeners.size > 0) started(earned, scope, key, lockoutMs, out);
      return finish(scope, key, out);
    }
    const out = finish(scope, key, d, rule.maxAttempts - 1);
    if (!out.allowed && (out.reason === 'locked' || out.reason === 'overflow')) uncounted.add(out);
    return out;
  }

  /**
   * portcullis:decision (metrics): a check's answer is the attempt's decision (one per attempt;
   * recordFailure and recordSuccess follow it). Sent only while someone listens.
   */
  function decided(scope: string, d: Decision): Decision {
    if (channels.decision.hasSubscribers) publishDecided(config.name, scope, d);
    return d;
  }

  function check(subject: Subject, scope?: string): MaybePromise<Decision> {
    return checkOf(subjectOf(subject), normalizeScope(scope));
  }

  function checkOf(s: ResolvedSubject, sc: string): MaybePromise<Decision> {
    if (s.exempt) return decided(sc, exemptDecision(s.key));
    const t = tableOf(sc);
    if (t !== undefined)
      return decided(sc, finish(sc, s.key, t.checkFailures(s.key, rule), rule.maxAttempts));
    const d = store.checkFailures(`${namespace}${sc}:${s.key}`, rule);
    return mapMaybe(d, (r) => decided(sc, finish(sc, s.key, r, rule.maxAttempts)));
  }

  function recordFailure(subject: Subject, scope?: string): MaybePromise<Decision> {
    return recordFailureOf(subjectOf(subject), normalizeScope(scope));
  }

  function recordFailureOf(s: ResolvedSubject, sc: string): MaybePromise<Decision> {
    if (s.exempt) return exemptDecision(s.key);
    const t = tableOf(sc);
    // A private memory table answers at once: no closure to allocate for a promise that never is.
    if (t !== undefined) return afterFailure(sc, s.key, t.recordFailure(s.key, rule));
    const d = store.recordFailure(`${namespace}${sc}:${s.key}`, rule);
    return mapMaybe(d, (r) => afterFailure(sc, s.key, r));
  }

  /**
   * A correct credential: one atomic store call forgets the failure history, unless a lockout is in
   * force (a concurrent failure may have started it after `check`): then the lockout stays and the
   * locked decision is returned, which the caller must refuse like any attempt during a lockout.
   */
  function recordSuccess(subject: Subject, scope?: string): MaybePromise<Decision> {
    return recordSuccessOf(subjectOf(subject), normalizeScope(scope));
  }

  function recordSuccessOf(s: ResolvedSubject, sc: string): MaybePromise<Decision> {
    if (s.exempt) return exemptDecision(s.key);
    const t = tableOf(sc);
    if (t !== undefined) return finish(sc, s.key, t.recordSuccess(s.key, rule));
    const d = store.recordSuccess(`${namespace}${sc}:${s.key}`, rule);
    return mapMaybe(d, (r) => finish(sc, s.key, r));
  }

  function recordDistinct(
    subject: Subject,
    member: string,
    scope?: string,
  ): MaybePromise<Decision> {
    return recordDistinctOf(subjectOf(subject), member, normalizeScope(scope));
  }

  function needsDistinct(): void {
    if (typeof store.recordDistinct !== 'function')
      throw new TypeError(
        'Portcullis: this store cannot count distinct failures (no Store.recordDistinct)',
      );
  }

  function recordDistinctOf(
    s: ResolvedSubject,
    member: string,
    sc: string,
  ): MaybePromise<Decision> {
    if (s.exempt) return exemptDecision(s.key);
    needsDistinct();
    const d = (store.recordDistinct as NonNullable<Store['recordDistinct']>).call(
      store,
      `${namespace}${sc}:${s.key}`,
      member,
      rule,
    );
    return mapMaybe(d, (r) => afterFailure(sc, s.key, r));
  }

  /**
   * `op` of `subject` as a step of a gate's batch: a store call with what turns its answer into
   * this limiter's decision, or the decision itself when no shared store call is needed (an
   * exempt subject, a private table).
   */
  function step(
    op: StepOp,
    subject: Subject,
    scope: string | undefined,
    member = '',
  ): Step<Decision> {
    const s = subjectOf(subject);
    const sc = normalizeScope(scope);
    if (s.exempt || tableOf(sc) !== undefined)
      switch (op) {
        case 'check':
          return checkOf(s, sc);
        case 'recordFailure':
          return recordFailureOf(s, sc);
        case 'recordSuccess':
          return recordSuccessOf(s, sc);
        case 'recordDistinct':
          return recordDistinctOf(s, member, sc);
      }
    const key = `${namespace}${sc}:${s.key}`;
    switch (op) {
      case 'check':
        return new StoreStep(store, { op: 'checkFailures', key, rule }, (r) =>
          decided(sc, finish(sc, s.key, r as Decision, rule.maxAttempts)),
        );
      case 'recordFailure':
        return new StoreStep(store, { op, key, rule }, (r) =>
          afterFailure(sc, s.key, r as FailureDecision),
        );
      case 'recordSuccess':
        return new StoreStep(store, { op, key, rule }, (r) => finish(sc, s.key, r as Decision));
      case 'recordDistinct':
        needsDistinct();
        return new StoreStep(store, { op, key, member, rule }, (r) =>
          afterFailure(sc, s.key, r as FailureDecision),
        );
    }
  }

  function reset(subject: Subject, scope?: string): MaybePromise<Decision> {
    const s = subjectOf(subject);
    const sc = normalizeScope(scope);
    const fresh = decision(
      true,
      s.exempt ? 'exempt' : 'allowed',
      rule.maxAttempts,
      rule.maxAttempts,
      0,
      0,
      s.key,
    );
    const t = tableOf(sc);
    const gone = t === undefined ? store.delete(`${namespace}${sc}:${s.key}`) : t.delete(s.key);
    return mapMaybe(gone, () => {
      const out = config.dryRun ? asDryRun(fresh) : fresh;
      // Once the store forgot it: a metrics reader dropping the lockout from its gauge is right.
      if (channels.reset.hasSubscribers)
        channels.reset.publish({ limiter: config.name, scope: sc, decision: out });
      return out;
    });
  }

  function reconfigure(partial: FailureLimiterReconfig): void {
    const p = parseOptions(partial, failureReconfigureSpec, 'reconfigure');
    // The stores read every number from the call's rule: history and lockouts are kept and judged
    // by the new numbers from the next call on (see FailureLimiter.reconfigure).
    if (p.maxAttempts !== undefined) config.maxAttempts = p.maxAttempts;
    if (p.windowMs !== undefined) config.windowMs = p.windowMs;
    if (p.lockoutMs !== undefined) config.lockoutMs = p.lockoutMs;
    if (p.exemptLoopback !== undefined) config.exemptLoopback = p.exemptLoopback;
    if (p.dryRun !== undefined) config.dryRun = p.dryRun;
    const before = rule;
    rule = {
      maxAttempts: config.maxAttempts,
      windowMs: config.windowMs,
      lockoutMs: config.lockoutMs,
      ...(escalate !== undefined && { escalate }),
    };
    // A failure log expires by the window it was stamped under: re-stamped under the new one, so
    // that a widened window keeps counting an attacker's failures (and counts none that had
    // already expired).
    if (before.windowMs !== rule.windowMs) restampStore(store, namespace, before, rule, logger);
  }

  function lockouts(options?: LockoutsOptions): MaybePromise<LockoutInfo[]> {
    const o = parseOptions(options ?? {}, lockoutsSpec, 'lockouts');
    const limit = o.limit ?? 1000;
    const only = o.scope === undefined ? undefined : normalizeScope(o.scope);
    if (typeof store.lockouts !== 'function')
      throw new TypeError('Portcullis: this store cannot list lockouts (it has no Store.lockouts)');
    const prefix = `${namespace}${only === undefined ? '' : `${only}:`}`;
    // A private memory store keeps each scope in a table of its own: it lists them all the same.
    const listed = store.lockouts(prefix, limit, rule);
    return mapMaybe(listed, (found) =>
      found.map((l) => {
        // `<scope>:<subject>` after the namespace: a scope holds no ':' of its own here, the
        // subject may (IPv6, browser-origin:…).
        const rest = l.key.slice(namespace.length);
        const colon = rest.indexOf(':');
        return {
          scope: colon < 0 ? 'default' : rest.slice(0, colon),
          key: colon < 0 ? rest : rest.slice(colon + 1),
          layer: l.ban ? 'ban' : earned,
          until: l.until,
          retryAfterMs: l.retryAfterMs,
        } satisfies LockoutInfo;
      }),
    );
  }

  function ban(subject: Subject, options: BanOptions): MaybePromise<Decision> {
    const o = parseOptions(options, banSpec, 'ban');
    const ms = required(o.ms, 'ms', 'an integer from 1 to 2147483647', 'ban') as number;
    const s = subjectOf(subject);
    const sc = normalizeScope(o.scope);
    if (s.exempt) return exemptDecision(s.key);
    const t = tableOf(sc);
    const banned = (d: FailureDecision) => {
      const out = withKey(d, s.key);
      if (out.reason === 'locked') {
        logger?.warn(
          {
            code: 'AUTH_RATE_LIMITED',
            limiter: config.name,
            scope: sc,
            key: s.key,
            layer: 'ban',
            ms,
          },
          `AUTH_RATE_LIMITED: banned by hand; locking out scope=${sc} key=${s.key} for ${ms}ms (until ${out.retryAfterMs}ms from now)`,
        );
        if (channels.lockout.hasSubscribers)
          channels.lockout.publish({
            limiter: config.name,
            scope: sc,
            decision: out,
            layer: 'ban',
          });
        if (listeners.size > 0) started('ban', sc, s.key, ms, out);
      }
      return config.dryRun ? asDryRun(out) : out;
    };
    if (t !== undefined) return banned(t.ban(s.key, rule, ms));
    if (typeof store.ban !== 'function')
      throw new TypeError('Portcullis: this store cannot ban (it has no Store.ban)');
    return mapMaybe(store.ban(`${namespace}${sc}:${s.key}`, rule, ms), banned);
  }

  const limiter: FailureLimiter = {
    reconfigure,
    lockouts,
    ban,
    check,
    recordFailure,
    recordSuccess,
    recordDistinct,
    escalate,
    keyOf: subjectOf,
    watchLockouts(listener: (started: StartedLockout) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    reset,
    size: () => store.size(),
    close: () => (ownStore ? store.close() : undefined),
    config,
    store,
    logger,
  };
  steppers.set(limiter, step);
  return limiter;
}

/** What a failure limiter can do as a step of a batch (see {@link limiterStep}). */
type StepOp = 'check' | 'recordFailure' | 'recordSuccess' | 'recordDistinct';

const steppers = new WeakMap<
  FailureLimiter,
  (op: StepOp, subject: Subject, scope: string | undefined, member?: string) => Step<Decision>
>();

/**
 * `limiter`'s `op` for `subject` as a step of a gate's batch (store-batch.ts): a limiter made here
 * gives its store call, to be made together with the other limiters' on the same store; any other
 * limiter (one a caller built by hand) is simply called.
 * @internal for the auth gate
 */
export function limiterStep(
  limiter: FailureLimiter,
  op: StepOp,
  subject: Subject,
  scope: string | undefined,
  member?: string,
): Step<Decision> {
  const stepper = steppers.get(limiter);
  if (stepper !== undefined) return stepper(op, subject, scope, member);
  if (op === 'recordDistinct') return limiter.recordDistinct(subject, member ?? '', scope);
  return limiter[op](subject, scope);
}
