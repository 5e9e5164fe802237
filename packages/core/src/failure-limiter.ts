import type { Clock, Timers } from './clock.js';
import type { Decision } from './decision.js';
import type { Logger } from './events.js';
import { FailureKeys } from './failure-keys.js';
import { banSubject, listLockouts } from './failure-lockouts.js';
import { normalizeScope, resolveFailureSetup } from './failure-options.js';
import { reconfigureFailures } from './failure-reconfigure.js';
import { FailureReports } from './failure-reports.js';
import { stepsThrough } from './failure-step.js';
import type { MemoryStore } from './memory-store.js';
import type { MaybePromise } from './promise.js';
import type { EscalateRule, Store } from './store.js';
import type { Warnings } from './warnings.js';

// The limiter's parts, each in a file of its own; what the gates import stays importable here.
export { refusedUncounted } from './failure-keys.js';
export {
  escalateRule,
  failureLimiterOption,
  failureLimiterSpec,
  normalizeScope,
} from './failure-options.js';
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

/** A lockout a limiter started, as {@link FailureLimiter.watchLockouts} reports it. */
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

/** What {@link FailureLimiter.reconfigure} may change. */
export type FailureLimiterReconfig = Partial<
  Pick<
    FailureLimiterOptions,
    'maxAttempts' | 'windowMs' | 'lockoutMs' | 'exemptLoopback' | 'dryRun'
  >
>;

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
 * `tabled`: its memory store is one no other code reads key by key (the gate's sibling store of
 * its layers), so each scope may live in a table of its own (failure-keys.ts).
 * @internal
 */
export function createLayerLimiter(
  options: FailureLimiterOptions,
  layer: Exclude<AuthLayer, 'client' | 'ban'>,
  tabled: boolean,
): FailureLimiter {
  return buildFailureLimiter(options, layer, tabled);
}

/**
 * The limiter's object over its parts: the options resolved once (failure-options.ts), the
 * per-key state ops (failure-keys.ts) and what reports their answers (failure-reports.ts), the
 * operator's lockout list and bans (failure-lockouts.ts), reconfigure (failure-reconfigure.ts).
 */
function buildFailureLimiter(
  options: FailureLimiterOptions | undefined,
  earned: Exclude<AuthLayer, 'ban'>,
  tabled = false,
): FailureLimiter {
  const setup = resolveFailureSetup(options, earned, tabled);
  const keys = new FailureKeys(setup, new FailureReports(setup));
  const { store, config, logger } = setup;
  const limiter: FailureLimiter = {
    reconfigure: (partial) => reconfigureFailures(keys, partial),
    lockouts: (o) => listLockouts(keys, o),
    ban: (subject, o) => banSubject(keys, subject, o),
    check: (subject, scope) => keys.check(keys.subjectOf(subject), normalizeScope(scope)),
    recordFailure: (subject, scope) =>
      keys.recordFailure(keys.subjectOf(subject), normalizeScope(scope)),
    recordSuccess: (subject, scope) =>
      keys.recordSuccess(keys.subjectOf(subject), normalizeScope(scope)),
    recordDistinct: (subject, member, scope) =>
      keys.recordDistinct(keys.subjectOf(subject), member, normalizeScope(scope)),
    escalate: setup.escalate,
    keyOf: (subject) => keys.subjectOf(subject),
    watchLockouts: (listener) => keys.reports.watch(listener),
    reset: (subject, scope) => keys.reset(keys.subjectOf(subject), normalizeScope(scope)),
    size: () => store.size(),
    close: () => (setup.own ? store.close() : undefined),
    config,
    store,
    logger,
  };
  stepsThrough(limiter, keys);
  return limiter;
}
