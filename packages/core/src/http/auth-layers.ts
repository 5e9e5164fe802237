import { type Clock, systemClock, systemTimers, type Timers } from '../clock.js';
import type { Decision } from '../decision.js';
import { PortcullisConfigError } from '../errors.js';
import type { Logger } from '../events.js';
import {
  type AuthLayer,
  createLayerLimiter,
  type FailureLimiter,
  limiterStep,
  refusedUncounted,
  type StartedLockout,
} from '../failure-limiter.js';
import { duration, integer, objectOption, parseOptions } from '../options.js';
import { isPromise, type MaybePromise, mapMaybe } from '../promise.js';
import { callSafely } from '../safe-call.js';
import type { TrustRule } from '../store.js';
import { type Step, StoreStep, runSteps } from '../store-batch.js';
import type { Warnings } from '../warnings.js';
import { siblingOf } from './browser-budget.js';

/** The pair layer: consecutive failures of one client against one account. */
export interface PairLimitOptions {
  /** Failures (a success of the pair clears them) that lock the pair. @default 20 */
  maxAttempts?: number;
  /** How long the pair stays locked; also how long an unlocked pair's failures are kept. @default 3_600_000 */
  lockoutMs?: number;
}

/** The account layer: failures against one account from every client (a soft lock). */
export interface AccountLimitOptions {
  /** Failures within `windowMs` that put the account under attack. @default 100 */
  maxAttempts?: number;
  /** @default 3_600_000 */
  windowMs?: number;
  /** How long the account stays under attack (untrusted clients refused). @default 3_600_000 */
  lockoutMs?: number;
}

/** The spray layer: distinct accounts one client failed against. */
export interface SprayLimitOptions {
  /** Distinct accounts within `windowMs` that lock the client for every account. @default 10 */
  maxAccounts?: number;
  /** @default 600_000 */
  windowMs?: number;
  /** @default 3_600_000 */
  lockoutMs?: number;
}

/** `accountLimits` (each layer may be `false`). */
export interface AccountLimitsOptions {
  pair?: PairLimitOptions | false;
  account?: AccountLimitOptions | false;
  spray?: SprayLimitOptions | false;
}

/** `scopeBudget`: failures in the scope from every client (a soft lock of the whole scope). */
export interface ScopeBudgetOptions {
  maxAttempts: number;
  windowMs: number;
  lockoutMs: number;
}

/** `loopbackPenalty`: failures of loopback-exempt clients are answered late, never refused. */
export interface LoopbackPenaltyOptions {
  /** The delay of the first failure; each consecutive one doubles it. @default 250 */
  baseMs?: number;
  /** The longest delay. @default 5_000 */
  maxMs?: number;
}

/** What `onLockout` receives when a layer starts a lockout (docs/design.md#defence-in-depth). */
export interface LockoutEvent {
  /** Which layer locked. */
  readonly layer: AuthLayer;
  /** The credential class. */
  readonly scope: string;
  /** The client key (pair, spray, client, ban), `account:<name>` (account) or `*` (scope). */
  readonly key: string;
  /** The account, for the pair and account layers. */
  readonly account?: string;
  /** How long the lockout lasts. */
  readonly lockoutMs: number;
  /** When it ends (ms since the epoch, by the gate's clock). */
  readonly until: number;
}

/** The defence-in-depth options of an auth gate (docs/design.md#defence-in-depth). */
export interface AuthLayerOptions<Req> {
  /**
   * The account an attempt is for (a user name, a device id), read before `verify`. Return the
   * same text for the same account: Portcullis neither case-folds nor normalises it (do it here,
   * e.g. `.normalize('NFKC').toLowerCase()`). Undefined: the credential names no account. Texts
   * over 256 characters, empty ones, non-strings and malformed UTF-16 share `account:invalid`.
   */
  account?: (req: Req) => MaybePromise<string | undefined>;
  /** The pair, account and spray layers (for attempts with an account); `false` turns them off. */
  accountLimits?: AccountLimitsOptions | false;
  /** Failures in the scope from every client; at the max, untrusted clients are refused. @default false */
  scopeBudget?: ScopeBudgetOptions | false;
  /** How long a success trusts the client (for its account, and in the scope). @default 2_592_000_000 (30 days) */
  trustMs?: number;
  /** Most trusts kept per scope. @default 10_000 */
  maxTrusted?: number;
  /** Delays failures of loopback-exempt clients. @default false */
  loopbackPenalty?: LoopbackPenaltyOptions | false;
  /** Called (errors caught and logged) whenever any layer starts a lockout, a ban included. */
  onLockout?: (event: LockoutEvent) => void;
}

/** What the layers' check found (see {@link AuthLayers.check}). */
export interface LayerCheck {
  /** The answers of the client's own checks, in order. */
  readonly base: Decision[];
  /** The layer refusal, if any. */
  readonly refused: Decision | undefined;
  /** Whether a success must clear the pair. */
  readonly pairFailures: boolean;
}

/** What counting an outcome in the layers found. */
export interface LayerCount {
  /** The answers of the client's own calls, in order. */
  readonly base: Decision[];
  /** A hard layer's lockout that a concurrent attempt started since the check. */
  readonly raced: Decision | undefined;
}

type Fail = (expected: string) => never;

const objectOf = <T>(value: unknown, fail: Fail): T =>
  objectOption<T>(value, fail, 'an object or false');

function layerOption<T>(spec: Parameters<typeof parseOptions>[1], where: string) {
  return (value: unknown, fail: Fail): T | false =>
    value === false ? false : (parseOptions(objectOf<T>(value, fail), spec, where) as T);
}

const pairSpec = { maxAttempts: integer(1), lockoutMs: duration(1) };
const accountSpec = { maxAttempts: integer(1), windowMs: duration(1), lockoutMs: duration(1) };
const spraySpec = { maxAccounts: integer(1, 1000), windowMs: duration(1), lockoutMs: duration(1) };

/** The option checks of {@link AuthLayerOptions}, for the gate's option spec. */
export const authLayerSpec = {
  account: (value: unknown, fail: Fail) =>
    typeof value === 'function' ? (value as (req: unknown) => unknown) : fail('a function'),
  accountLimits: (value: unknown, fail: Fail): AccountLimitsOptions | false =>
    value === false
      ? false
      : (parseOptions(
          objectOf<AccountLimitsOptions>(value, fail),
          {
            pair: layerOption<PairLimitOptions>(pairSpec, 'accountLimits.pair'),
            account: layerOption<AccountLimitOptions>(accountSpec, 'accountLimits.account'),
            spray: layerOption<SprayLimitOptions>(spraySpec, 'accountLimits.spray'),
          },
          'accountLimits',
        ) as AccountLimitsOptions),
  scopeBudget: (value: unknown, fail: Fail): ScopeBudgetOptions | false => {
    if (value === false) return false;
    const o = parseOptions(objectOf<ScopeBudgetOptions>(value, fail), accountSpec, 'scopeBudget');
    for (const name of ['maxAttempts', 'windowMs', 'lockoutMs'] as const)
      if (o[name] === undefined)
        throw new PortcullisConfigError(
          'ERR_PORTCULLIS_SCOPE_BUDGET',
          'scopeBudget',
          `scopeBudget: "${name}" is required ({ maxAttempts, windowMs, lockoutMs }, or false)`,
        );
    return o as ScopeBudgetOptions;
  },
  trustMs: duration(1),
  maxTrusted: integer(1, 10_000_000),
  loopbackPenalty: layerOption<LoopbackPenaltyOptions>(
    { baseMs: integer(1, 60_000), maxMs: integer(1, 600_000) },
    'loopbackPenalty',
  ),
  onLockout: (value: unknown, fail: Fail) =>
    typeof value === 'function' ? (value as (event: LockoutEvent) => void) : fail('a function'),
};

/** Half of a UTF-16 pair without its other half (in `u` mode a whole pair is one code point). */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Texts longer than this share `account:invalid`. */
const MAX_ACCOUNT_LENGTH = 256;

/**
 * The key of the account an attempt names: `account:<text>`, or the shared `account:invalid` for
 * what cannot be one (a huge, empty or non-string value, malformed UTF-16: a shared store would
 * turn two different malformed texts into one key). `undefined` stays undefined (no account).
 */
export function accountKey(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_ACCOUNT_LENGTH ||
    LONE_SURROGATE.test(value)
  )
    return 'account:invalid';
  return `account:${value}`;
}

interface Built {
  readonly pair: FailureLimiter | undefined;
  readonly account: FailureLimiter | undefined;
  readonly spray: FailureLimiter | undefined;
  readonly scope: FailureLimiter | undefined;
}

/** What the gate needs of its client limiter and options to build the layers. */
export interface LayerSetup {
  readonly client: FailureLimiter;
  readonly logger: Logger | undefined;
  readonly warnings: Warnings | undefined;
  readonly clock: Clock | undefined;
  readonly timers: Timers | undefined;
}

/** A decision with the layer that made it (only the server sees it). */
export function withLayer(d: Decision, layer: AuthLayer): Decision {
  return { ...d, layer };
}

/**
 * The defence-in-depth layers of one auth gate: failure limiters of their own over the client
 * limiter's store (a memory store's sibling, so that their keys neither crowd out clients nor show
 * in the client limiter's lockouts), plus the store's trust table.
 */
export class AuthLayers {
  readonly #l: Built;
  readonly #trust: TrustRule;
  readonly #clock: Clock;
  readonly #onLockout: ((event: LockoutEvent) => void) | undefined;
  readonly #logger: Logger | undefined;
  readonly #unwatch: (() => void)[] = [];
  readonly #store;
  readonly #table: string;
  readonly #scopeTable: string;
  readonly #tableNames = new Map<string, readonly [string, string]>();
  /** Whether any layer is on (else the gate keeps its plain path). */
  readonly active: boolean;

  constructor(o: AuthLayerOptions<unknown>, setup: LayerSetup) {
    const client = setup.client;
    const name = client.config.name;
    const store = siblingOf(client.store, 'layers');
    this.#store = store;
    // Account trust and scope trust are two tables: in one, the scope's group (every trusted
    // client) would always be the largest and give its trusts first to any account's new one.
    this.#table = `${name}.trust:`;
    this.#scopeTable = `${name}.scope-trust:`;
    const limits = o.accountLimits === undefined ? {} : o.accountLimits;
    const common = {
      store,
      exemptLoopback: false,
      ipv6Subnet: false as const,
      ...(setup.logger !== undefined && { logger: setup.logger }),
      ...(setup.warnings !== undefined && { warnings: setup.warnings }),
    };
    const escalate = client.escalate;
    const esc = escalate === undefined ? {} : { escalate };
    const build = (
      layer: 'pair' | 'account' | 'spray' | 'scope',
      numbers: { maxAttempts: number; windowMs: number; lockoutMs: number },
      escalates: boolean,
    ) =>
      createLayerLimiter(
        {
          ...common,
          ...numbers,
          ...(escalates ? esc : {}),
          name: `${name}.${layer}`,
        },
        layer,
      );
    // Each layer's numbers from its options and the defaults (docs/design.md#defence-in-depth);
    // undefined when the layer is off. The pair counts consecutive failures: its window is its
    // lockout's length.
    const of = <T>(v: T | false | undefined) =>
      limits === false || v === false ? undefined : (v ?? ({} as T));
    const pair = of(limits === false ? false : limits.pair);
    const acct = of(limits === false ? false : limits.account);
    const spray = of(limits === false ? false : limits.spray);
    const HOUR = 3_600_000;
    this.#l = {
      pair:
        pair &&
        build(
          'pair',
          {
            maxAttempts: pair.maxAttempts ?? 20,
            windowMs: pair.lockoutMs ?? HOUR,
            lockoutMs: pair.lockoutMs ?? HOUR,
          },
          true,
        ),
      account:
        acct &&
        build(
          'account',
          {
            maxAttempts: acct.maxAttempts ?? 100,
            windowMs: acct.windowMs ?? HOUR,
            lockoutMs: acct.lockoutMs ?? HOUR,
          },
          false,
        ),
      spray:
        spray &&
        build(
          'spray',
          {
            maxAttempts: spray.maxAccounts ?? 10,
            windowMs: spray.windowMs ?? 600_000,
            lockoutMs: spray.lockoutMs ?? HOUR,
          },
          true,
        ),
      scope:
        o.scopeBudget === undefined || o.scopeBudget === false
          ? undefined
          : build('scope', o.scopeBudget, false),
    };
    this.#trust = { trustMs: o.trustMs ?? 2_592_000_000, maxTrusted: o.maxTrusted ?? 10_000 };
    this.#clock = setup.clock ?? systemClock;
    this.#onLockout = o.onLockout;
    this.#logger = setup.logger;
    this.active = Object.values(this.#l).some((l) => l !== undefined);
    if (this.active && (typeof store.trust !== 'function' || typeof store.trusted !== 'function'))
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_STORE',
        'store',
        'authGuard: the account limits and scopeBudget need a store with trust() and trusted() (MemoryStore and RedisStore have them)',
      );
    if (this.#l.spray !== undefined && typeof store.recordDistinct !== 'function')
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_STORE',
        'store',
        'authGuard: accountLimits.spray needs a store with recordDistinct() (MemoryStore and RedisStore have it)',
      );
    if (this.#onLockout !== undefined) {
      const report = (started: StartedLockout, account?: string) => this.#report(started, account);
      this.#unwatch.push(client.watchLockouts((s) => report(s)));
      // The account is read back from the layer's key; a key too long to keep (a client key and
      // an account together over 256 characters) is a digest, and then the event names none.
      const accountIn = (key: string) =>
        key.startsWith('account:') ? key.slice('account:'.length) : undefined;
      const split = (s: StartedLockout) => {
        const at = s.key.indexOf('\u0000');
        if (at < 0) report(s);
        else report({ ...s, key: s.key.slice(0, at) }, accountIn(s.key.slice(at + 1)));
      };
      if (this.#l.pair !== undefined) this.#unwatch.push(this.#l.pair.watchLockouts(split));
      if (this.#l.account !== undefined)
        this.#unwatch.push(this.#l.account.watchLockouts((s) => report(s, accountIn(s.key))));
      for (const l of [this.#l.spray, this.#l.scope])
        if (l !== undefined) this.#unwatch.push(l.watchLockouts((s) => report(s)));
    }
  }

  /** The layer limiters that exist (for listing and closing). */
  get limiters(): FailureLimiter[] {
    return Object.values(this.#l).filter((l): l is FailureLimiter => l !== undefined);
  }

  /** Follows the client limiter's extra listener for another limiter (a gate's browser limiter). */
  watch(limiter: FailureLimiter): void {
    if (this.#onLockout === undefined) return;
    this.#unwatch.push(limiter.watchLockouts((s) => this.#report(s)));
  }

  #report(s: StartedLockout, account?: string): void {
    const event: LockoutEvent = {
      layer: s.layer,
      scope: s.scope,
      key: s.key,
      ...(account !== undefined && { account }),
      lockoutMs: s.lockoutMs,
      until: this.#clock.now() + s.retryAfterMs,
    };
    callSafely(this.#onLockout, [event], (error) =>
      this.#logger?.error(
        { code: 'PORTCULLIS_HOOK_ERROR', hook: 'onLockout', error },
        'Portcullis: onLockout threw; the lockout stands',
      ),
    );
  }

  /**
   * Before the credential counts: the layers' state for `client` (its limiter key) and `account`
   * in `scope`, read in one batch with `base` (the client limiter's own checks), whose answers
   * come back as they are. Hard layers (pair, spray) refuse outright; soft ones (account, scope)
   * refuse only a client without trust, read in a second batch only then. `pairFailures` says
   * whether a success must clear the pair.
   */
  check(
    client: string,
    account: string | undefined,
    scope: string,
    base: readonly Step<Decision>[],
  ): MaybePromise<LayerCheck> {
    const l = this.#l;
    const withAccount = account !== undefined;
    const steps: Step<unknown>[] = base.slice();
    steps.push(
      withAccount && l.pair !== undefined
        ? limiterStep(l.pair, 'check', `${client}\u0000${account}`, scope)
        : OPEN,
      withAccount && l.spray !== undefined ? limiterStep(l.spray, 'check', client, scope) : OPEN,
      withAccount && l.account !== undefined
        ? limiterStep(l.account, 'check', account, scope)
        : OPEN,
      l.scope !== undefined ? limiterStep(l.scope, 'check', '*', scope) : OPEN,
    );
    return mapMaybe(runSteps(steps), (answers): MaybePromise<LayerCheck> => {
      const n = base.length;
      const baseAnswers = answers.slice(0, n) as Decision[];
      // A layer store full of lockouts cannot take a new key ('overflow'): that layer is open for
      // it (nothing is held against it), and the client layer still limits the client. Refusing
      // would let a botnet that filled the layers' store with its own lockouts refuse everyone.
      const p = openOnOverflow(answers[n] as Decision);
      const spray = openOnOverflow(answers[n + 1] as Decision);
      const a = openOnOverflow(answers[n + 2] as Decision);
      const sc = openOnOverflow(answers[n + 3] as Decision);
      // An escalating pair may hold no failures but the step of its last lockout, which a success
      // must forget too: the check cannot show it, so a success then always clears the pair.
      const pairFailures = p.allowed && (p.remaining < p.limit || l.pair?.escalate !== undefined);
      const hard = worst([
        [p, 'pair'],
        [spray, 'spray'],
      ]);
      if (hard !== undefined || (a.allowed && sc.allowed))
        return { base: baseAnswers, refused: hard, pairFailures };
      const soft = (trust: readonly unknown[]): LayerCheck => {
        const forAccount = (trust[0] as readonly boolean[])[0] === true;
        const inScope = (trust[1] as readonly boolean[])[0] === true;
        const refused = worst([
          [a.allowed || forAccount ? OPEN : a, 'account'],
          [sc.allowed || inScope || forAccount ? OPEN : sc, 'scope'],
        ]);
        return { base: baseAnswers, refused, pairFailures };
      };
      // Trust is read only now (under attack), from the tables a refusal depends on: an attack
      // costs one store operation more, an ordinary login nothing.
      return mapMaybe(runSteps(this.#trustReads(client, account, scope, !sc.allowed)), soft);
    });
  }

  /**
   * The trust reads a soft refusal depends on: the account's trust (it lets a client through both
   * soft layers) and the scope's; a table not asked for reads as no trust.
   */
  #trustReads(
    client: string,
    account: string | undefined,
    scope: string,
    inScope: boolean,
  ): Step<unknown>[] {
    const l = this.#l;
    const [accountTable, scopeTable] = this.#tables(scope);
    return [
      account !== undefined && (l.account !== undefined || l.scope !== undefined)
        ? this.#trusted(accountTable, client, account)
        : NO_TRUST,
      inScope && l.scope !== undefined ? this.#trusted(scopeTable, client, 's') : NO_TRUST,
    ];
  }

  /**
   * The account and scope trust tables of `scope`, named once per scope: a name built per call is
   * a new string, which every map lookup of it must hash again.
   */
  #tables(scope: string): readonly [string, string] {
    let names = this.#tableNames.get(scope);
    if (names === undefined) {
      names = [this.#table + scope, this.#scopeTable + scope];
      if (this.#tableNames.size < 64) this.#tableNames.set(scope, names);
    }
    return names;
  }

  /** Whether `client` holds a trust of `group` (an account's key, or `s`) in `table`. */
  #trusted(table: string, client: string, group: string): StoreStep<boolean[]> {
    return new StoreStep(
      this.#store,
      { op: 'trusted', table, member: client, groups: [group], rule: this.#trust },
      (answer) => answer as boolean[],
    );
  }

  /**
   * A wrong credential: counted in every layer at once, in one batch with `base` (the client
   * limiter's own failures). `raced` is the refusal of a hard layer whose lockout a concurrent
   * attempt started since `check` (refused like any attempt during it).
   */
  failure(
    client: string,
    account: string | undefined,
    scope: string,
    base: readonly Step<Decision>[],
  ): MaybePromise<LayerCount> {
    const l = this.#l;
    const withAccount = account !== undefined;
    const steps: Step<unknown>[] = [
      ...base,
      withAccount && l.pair !== undefined
        ? limiterStep(l.pair, 'recordFailure', `${client}\u0000${account}`, scope)
        : OPEN,
      withAccount && l.spray !== undefined
        ? limiterStep(l.spray, 'recordDistinct', client, scope, account)
        : OPEN,
      withAccount && l.account !== undefined
        ? limiterStep(l.account, 'recordFailure', account, scope)
        : OPEN,
      l.scope !== undefined ? limiterStep(l.scope, 'recordFailure', '*', scope) : OPEN,
    ];
    return mapMaybe(runSteps(steps), (answers): LayerCount => {
      const n = base.length;
      return {
        base: answers.slice(0, n) as Decision[],
        raced: worst([
          [raced(answers[n] as Decision), 'pair'],
          [raced(answers[n + 1] as Decision), 'spray'],
        ]),
      };
    });
  }

  /**
   * A right credential, in one batch with `base` (the client limiter's own success): the pair's
   * failures go (when it had any), and the client is trusted for the account and in the scope.
   * `raced` is the pair's lockout if a concurrent attempt started one.
   */
  success(
    client: string,
    account: string | undefined,
    scope: string,
    pairFailures: boolean,
    base: readonly Step<Decision>[],
  ): MaybePromise<LayerCount> {
    const l = this.#l;
    const [accountTable, scopeTable] = this.#tables(scope);
    const steps: Step<unknown>[] = [
      ...base,
      account !== undefined && pairFailures && l.pair !== undefined
        ? limiterStep(l.pair, 'recordSuccess', `${client}\u0000${account}`, scope)
        : OPEN,
      this.#earn(scopeTable, 's', client),
    ];
    if (account !== undefined) steps.push(this.#earn(accountTable, account, client));
    return mapMaybe(runSteps(steps), (answers): LayerCount => {
      const n = base.length;
      const p = answers[n] as Decision;
      return {
        base: answers.slice(0, n) as Decision[],
        raced: p.allowed ? undefined : withLayer(p, 'pair'),
      };
    });
  }

  /** `client` authenticated for `group` (an account's key, or `s`) of `table`. */
  #earn(table: string, group: string, client: string): StoreStep<undefined> {
    return new StoreStep(
      this.#store,
      { op: 'trust', table, group, member: client, rule: this.#trust },
      () => undefined,
    );
  }

  close(): MaybePromise<void> {
    for (const stop of this.#unwatch.splice(0)) stop();
    const closing = this.limiters.map((l) => l.close());
    return closing.some(isPromise) ? Promise.all(closing).then(() => undefined) : undefined;
  }
}

/** The trust answer of a table that need not be read. */
const NO_TRUST: readonly boolean[] = Object.freeze([false]);

/** An allowed answer standing for a layer that is off. */
const OPEN: Decision = Object.freeze({
  allowed: true,
  reason: 'allowed',
  limit: 1,
  remaining: 1,
  retryAfterMs: 0,
  resetMs: 0,
  key: '',
});

/** A layer's answer with an overflow (no room for a new key) read as open. */
function openOnOverflow(d: Decision): Decision {
  return d.reason === 'overflow' ? OPEN : d;
}

/** A hard layer's lockout that a concurrent attempt started since the check (never an overflow). */
function raced(d: Decision): Decision {
  return refusedUncounted(d) && d.reason === 'locked' ? d : OPEN;
}

/** The refusal that waits longest among layer answers, marked with its layer. */
function worst(answers: readonly [Decision, AuthLayer][]): Decision | undefined {
  let out: [Decision, AuthLayer] | undefined;
  for (const a of answers)
    if (!a[0].allowed && (out === undefined || a[0].retryAfterMs > out[0].retryAfterMs)) out = a;
  return out === undefined ? undefined : withLayer(out[0], out[1]);
}

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
