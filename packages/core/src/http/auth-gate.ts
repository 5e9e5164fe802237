import { createClientResolver, parseTrustedProxies, type RawRequest } from '../client.js';
import { isPromise, type MaybePromise, mapMaybe } from '../promise.js';
import type { Decision } from '../decision.js';
import {
  type ErrorShape,
  authFailedError,
  authRateLimitedError,
  retryAfterSeconds,
  storeUnavailableError,
} from '../error-shapes.js';
import { PortcullisConfigError } from '../errors.js';
import type { Logger } from '../events.js';
import {
  createFailureLimiter,
  type FailureLimiter,
  type FailureLimiterOptions,
  type FailureLimiterReconfig,
  failureLimiterOption,
  failureLimiterSpec,
  limiterStep,
  normalizeScope,
  refusedUncounted,
} from '../failure-limiter.js';
import {
  boolean,
  exclusiveLimiter,
  func,
  hiddenOption,
  integer,
  objectOption,
  parseOptions,
  required,
  withMethods,
} from '../options.js';
import { presets } from '../presets.js';
import { type AuthSubject, authSubject } from '../subject.js';
import { type Warnings, warningsOption } from '../warnings.js';
import { type GateResult, jsonAnswer } from './answer.js';
import {
  accountKey,
  type AuthLayerOptions,
  AuthLayers,
  authLayerSpec,
  LoopbackPenalty,
  withLayer,
} from './auth-layers.js';
import {
  type BrowserBudgetOptions,
  type BudgetCheck,
  browserBudgets,
  browserLimiterFor,
  eachMaybe,
  firstRefusal,
} from './browser-budget.js';

const browserBudgetOption = (value: unknown, fail: (expected: string) => never) =>
  parseOptions(
    objectOption<BrowserBudgetOptions>(value, fail),
    { perSite: integer(1), allOrigins: integer(1) },
    'browserBudget',
  );

/** What a credential check found. */
export type AuthOutcome = 'ok' | 'invalid' | 'missing';

/** Options of {@link createAuthGate} (and of every adapter's `authGuard`). */
export interface AuthGateOptions<Req> extends FailureLimiterOptions, AuthLayerOptions<Req> {
  /** Compares the request's credentials. Keep it constant-time. Required by HTTP guards. */
  verify?: (req: Req) => MaybePromise<AuthOutcome>;
  /** The credential class (`shared-secret`, `device-token`, …). @default 'default' */
  scope?: string;
  /**
   * A failure limiter to use (share one between guards of the same credential class). Excludes
   * the limiter options (`maxAttempts`, `windowMs`, `lockoutMs`, `store`, `clock`, …), which
   * otherwise build the gate's own limiter, with `presets.gatewayAuth` for what is not given.
   */
  limiter?: FailureLimiter;
  /** The limiter for requests with an `Origin` (never loopback-exempt). @default same numbers, no exemption */
  browserLimiter?: FailureLimiter;
  /**
   * Aggregate budgets of loopback browser attempts (each origin keeps its own bucket too): per site
   * (registrable domain) and across all local browser origins.
   * @default { perSite: maxAttempts, allOrigins: 3 × maxAttempts }
   */
  browserBudget?: BrowserBudgetOptions;
  /** Proxies whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[];
  /** Believe `X-Real-IP` from a trusted proxy. @default false */
  allowRealIpFallback?: boolean;
  /** Receives the untrusted-loopback-proxy warning. */
  logger?: Logger;
  /**
   * Misconfiguration warnings switched off, by code (`{ PORTCULLIS_UNTRUSTED_FORWARDED: false }`);
   * the limiters the gate builds get the same.
   * @default every warning on
   */
  warnings?: Warnings;
}

/**
 * Options of an adapter's `authGuard` (docs/design.md#adapters): those of {@link createAuthGate},
 * with `verify` required and receiving what the framework calls its request (`Req`). Adapters
 * add their own translation options (a client address, hooks) beside these.
 */
export interface AuthGuardOptions<Req> extends Omit<AuthGateOptions<Req>, 'verify'> {
  /** Compares the request's credentials (constant-time, please). */
  verify: (req: Req) => MaybePromise<AuthOutcome>;
}

/** A string (blank means the default scope, as docs/design.md#failure-limiter says). */
const stringOption = (value: unknown, fail: (expected: string) => never): string =>
  typeof value === 'string' ? value : fail('a string');

/** Options every gate shares with {@link createClientResolver}. */
export const clientOptionSpec = {
  trustedProxies: (value: unknown, fail: (expected: string) => never) => {
    parseTrustedProxies(value, fail);
    return value as readonly string[];
  },
  allowRealIpFallback: boolean,
  logger: withMethods<Logger>('warn', 'error'),
  warnings: warningsOption,
};

/** Extra option names an adapter may accept on top of a gate's (its own translation options). */
export type AdapterOptionSpec = Record<
  string,
  (value: unknown, fail: (expected: string) => never) => unknown
>;

/** How an adapter builds a gate: its factory name for messages, whether `verify` is required, its own extra options. */
export interface GateSetup {
  /** The factory named in config errors. @default 'authGuard' */
  readonly where?: string;
  /** Whether `verify` must be given. @default true */
  readonly needsVerify?: boolean;
  /** Option names the adapter handles itself (validated here, ignored by the gate). */
  readonly extra?: AdapterOptionSpec;
  /**
   * Accounts come with each `decide` call (a ws first frame), not from an `account` option: the
   * account limits are on without it. @default false
   */
  readonly accountPerCall?: boolean;
}

/** The failure-limiter options a gate takes flat, beside its own (the gate's `logger` is shared). */
const {
  logger: _sharedLogger,
  warnings: _sharedWarnings,
  ...limiterOptionSpec
} = failureLimiterSpec;
export const flatLimiterSpec = {
  ...limiterOptionSpec,
  options: hiddenOption((_value: unknown, fail: (expected: string) => never): never =>
    fail(
      'flat: the failure-limiter options go beside the others since 1.0 (authGuard({ verify, maxAttempts: 5, lockoutMs: 600_000 })), not under "options"',
    ),
  ),
};

/**
 * The failure-limiter options among a gate's parsed options. With `limiter` given there must be
 * none: they would be silently ignored.
 */
export function flatLimiterOptions(
  o: Record<string, unknown> & { limiter?: unknown },
  where: string,
): FailureLimiterOptions {
  const names = Object.keys(limiterOptionSpec);
  exclusiveLimiter(o, names, where);
  const out: Record<string, unknown> = {};
  for (const name of names) if (o[name] !== undefined) out[name] = o[name];
  return out as FailureLimiterOptions;
}

/** A compiled auth gate: one per guarded route or socket server. */
export interface AuthGate<Req> {
  /** Runs `verify(req)` and the lockout sequence; `raw` is the Node request behind `req`. */
  run(raw: RawRequest, req: Req): MaybePromise<GateResult>;
  /**
   * The lockout sequence for an outcome found elsewhere (e.g. in a first WS frame). `scope`
   * overrides the gate's credential class for this call (blank = `'default'`); `account` is the
   * account the attempt names, for the account limits (docs/design.md#defence-in-depth).
   */
  decide(
    raw: RawRequest,
    outcome: AuthOutcome,
    scope?: string,
    account?: unknown,
  ): MaybePromise<GateResult>;
  /**
   * The defence-in-depth layers' limiters (pair, account, spray, scope; empty when off): their
   * `lockouts()` list the layers' lockouts (`layer` names each), `reset` lifts one.
   */
  readonly layers: readonly FailureLimiter[];
  /** The limiter for non-browser clients. */
  readonly limiter: FailureLimiter;
  /** The limiter for browser clients (requests with `Origin`). */
  readonly browserLimiter: FailureLimiter;
  /**
   * Changes the numbers in force (see `FailureLimiter.reconfigure`): the gate's limiter, and the
   * browser limiter and budgets built from it, follow at once; earned lockouts are kept.
   */
  reconfigure(partial: FailureLimiterReconfig): void;
  /**
   * Closes the limiters the gate built (and with them the browser budgets' stores it made); a
   * `limiter` or `browserLimiter` you passed is yours to close.
   */
  close(): MaybePromise<void>;
}

/** The layers' check of one attempt: its refusal, or what counts its outcome. */
type LayeredCheck =
  | { readonly refused: GateResult; readonly count?: undefined }
  | {
      readonly refused?: undefined;
      readonly count: (outcome: 'ok' | 'invalid') => MaybePromise<GateResult>;
    };

/** Closes `limiters`, synchronously when every one closes so. */
export function closeAll(limiters: readonly { close(): MaybePromise<void> }[]): MaybePromise<void> {
  const closing = limiters.map((limiter) => limiter.close());
  return closing.some(isPromise) ? Promise.all(closing).then(() => undefined) : undefined;
}

/** Freezes an error shape and its details, so a shared one cannot be changed by a caller. */
function frozen<T extends ErrorShape>(shape: T): T {
  if (shape.details !== undefined) Object.freeze(shape.details);
  return Object.freeze(shape);
}

/** Validates what `verify` returned; anything else is a programming error. */
export function checkOutcome(outcome: unknown): AuthOutcome {
  if (outcome === 'ok' || outcome === 'invalid' || outcome === 'missing') return outcome;
  throw new TypeError(
    `Portcullis: verify() must return 'ok', 'invalid' or 'missing', got ${String(outcome)}`,
  );
}

/**
 * The gateway auth sequence (docs/design.md#gateway-auth) for any transport: missing credentials are answered 401
 * and neither checked nor counted; otherwise the limiter is checked first, so a locked-out client
 * is refused even with the right credentials; a wrong credential is counted (401), a right one
 * resets the scope for that client. Browser requests use the browser limiter (docs/design.md#browser-origins).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function createAuthGate<Req>(
  options: AuthGateOptions<Req>,
  setup: GateSetup = {},
): AuthGate<Req> {
  const where = setup.where ?? 'authGuard';
  const o = parseOptions(
    options,
    {
      ...setup.extra,
      verify: func,
      scope: stringOption,
      limiter: failureLimiterOption,
      ...flatLimiterSpec,
      browserLimiter: failureLimiterOption,
      browserBudget: browserBudgetOption,
      ...authLayerSpec,
      ...clientOptionSpec,
    },
    where,
  );
  const own = flatLimiterOptions(o, where);
  const verify = (
    (setup.needsVerify ?? true) ? required(o.verify, 'verify', 'a function', where) : o.verify
  ) as ((req: Req) => MaybePromise<AuthOutcome>) | undefined;
  // The gate's logger also receives the lockout warnings of the limiters it builds.
  const limiter =
    o.limiter ??
    createFailureLimiter({
      ...presets.gatewayAuth,
      ...(o.logger !== undefined && { logger: o.logger }),
      ...(o.warnings !== undefined && { warnings: o.warnings }),
      ...own,
    });
  const lockoutLogger = limiter.logger ?? o.logger;
  // Browser lockouts live beside the main limiter's store; they go with the gate only when the gate
  // built that store (nothing else can reach it).
  const ownsStore = o.limiter === undefined && own.store === undefined;
  const browserLimiter = o.browserLimiter ?? browserLimiterFor(limiter, lockoutLogger, ownsStore);
  const browser = browserBudgets(browserLimiter, o.browserBudget ?? {});
  if (o.accountLimits !== undefined && o.account === undefined && setup.accountPerCall !== true)
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_ACCOUNT_LIMITS',
      'accountLimits',
      `${where}: "accountLimits" needs "account" (a function of the request naming the account of the attempt)`,
    );
  // Per-call accounts (ws) turn the account limits on by default only over a store that can hold
  // them: a custom store from before 1.x keeps working, unless the limits are asked for.
  const store = limiter.store;
  const capable = typeof store.trust === 'function' && typeof store.recordDistinct === 'function';
  const accountsOn =
    o.accountLimits !== false &&
    (o.account !== undefined ||
      (setup.accountPerCall === true && (o.accountLimits !== undefined || capable)));
  const layerOptions = {
    ...o,
    ...(!accountsOn && { accountLimits: false as const }),
  } as AuthLayerOptions<unknown>;
  const wantLayers =
    accountsOn ||
    (o.scopeBudget !== undefined && o.scopeBudget !== false) ||
    o.onLockout !== undefined;
  const layers = wantLayers
    ? new AuthLayers(layerOptions, {
        client: limiter,
        logger: lockoutLogger,
        warnings: o.warnings,
        clock: own.clock,
        timers: own.timers,
      })
    : undefined;
  if (layers !== undefined && o.browserLimiter === undefined) layers.watch(browserLimiter);
  const accountLayers = accountsOn && layers !== undefined;
  const scopeLayer = o.scopeBudget !== undefined && o.scopeBudget !== false;
  const penalty =
    o.loopbackPenalty === undefined || o.loopbackPenalty === false
      ? undefined
      : new LoopbackPenalty(o.loopbackPenalty, own.timers);
  const account = o.account as ((req: Req) => MaybePromise<string | undefined>) | undefined;
  const gateScope = normalizeScope(o.scope);
  const resolve = createClientResolver({
    ...(o.trustedProxies !== undefined && { trustedProxies: o.trustedProxies }),
    ...(o.allowRealIpFallback !== undefined && { allowRealIpFallback: o.allowRealIpFallback }),
    ...(o.logger !== undefined && { logger: o.logger }),
    ...(o.warnings !== undefined && { warnings: o.warnings }),
  });
  // The fixed answers are built once; only a lockout's body depends on the request.
  // Frozen, because the same objects go to every caller (a ws refusal hands them to user code).
  const missingError = frozen(authFailedError('missing'));
  const invalidError = frozen(authFailedError('invalid'));
  const unavailableError = frozen(storeUnavailableError());
  const missing = jsonAnswer(401, missingError);
  const missingResult: GateResult = Object.freeze({
    ok: false,
    reason: 'missing',
    decision: undefined,
    answer: missing,
    error: missingError,
  });
  const invalid = jsonAnswer(401, invalidError);
  const unavailable = jsonAnswer(503, unavailableError);

  function refuse(d: Decision): GateResult {
    if (d.reason === 'store-error') {
      return {
        ok: false,
        reason: 'unavailable',
        decision: d,
        answer: unavailable,
        error: unavailableError,
      };
    }
    const error = authRateLimitedError(d.retryAfterMs);
    return {
      ok: false,
      reason: 'rate_limited',
      decision: d,
      answer: jsonAnswer(429, error, { 'Retry-After': String(retryAfterSeconds(d.retryAfterMs)) }),
      error,
    };
  }

  /**
   * The browser limiter the gate built has the main limiter's numbers: when the main one was
   * reconfigured (through this gate or directly), it follows before its next decision.
   */
  function followMain(): void {
    const m = limiter.config;
    const b = browserLimiter.config;
    if (
      b.maxAttempts !== m.maxAttempts ||
      b.windowMs !== m.windowMs ||
      b.lockoutMs !== m.lockoutMs ||
      b.dryRun !== m.dryRun
    )
      browserLimiter.reconfigure({
        maxAttempts: m.maxAttempts,
        windowMs: m.windowMs,
        lockoutMs: m.lockoutMs,
        dryRun: m.dryRun,
      });
  }

  /** The lockout sequence on one limiter (non-browser clients): check, then count or reset. */
  function decideOne(
    lim: FailureLimiter,
    subject: AuthSubject,
    outcome: 'ok' | 'invalid',
    scope: string,
  ): MaybePromise<GateResult> {
    return mapMaybe(lim.check(subject, scope), (d): MaybePromise<GateResult> => {
      if (!d.allowed) return refuse(d);
      if (outcome === 'ok')
        return mapMaybe(lim.recordSuccess(subject, scope), (after) =>
          // A lockout that started since `check` stands: a right credential is refused like any.
          after.allowed ? { ok: true, decision: after } : refuse(after),
        );
      // A concurrent request may have started the lockout since `check`: refuse, as `check` would.
      return mapMaybe(lim.recordFailure(subject, scope), (after) =>
        refusedUncounted(after)
          ? refuse(after)
          : { ok: false, reason: 'invalid', decision: after, answer: invalid, error: invalidError },
      );
    });
  }

  /**
   * The same sequence over several budgets (a loopback browser: its origin, its site, all local
   * origins): every one must allow; a failure counts in each; a success resets only the origin's own
   * bucket, so a right credential from one page never refunds what other pages spent.
   */
  function decideAll(
    checks: readonly BudgetCheck[],
    outcome: 'ok' | 'invalid',
    scope: string,
  ): MaybePromise<GateResult> {
    const own = checks[0] as BudgetCheck;
    return mapMaybe(
      eachMaybe(checks, (c) => c.limiter.check(c.subject, scope)),
      (before): MaybePromise<GateResult> => {
        const refused = firstRefusal(before);
        if (refused !== undefined) return refuse(refused);
        if (outcome === 'ok')
          return mapMaybe(own.limiter.recordSuccess(own.subject, scope), (after) =>
            after.allowed ? { ok: true, decision: after } : refuse(after),
          );
        return mapMaybe(
          eachMaybe(checks, (c) => c.limiter.recordFailure(c.subject, scope)),
          (after) => {
            const raced = after.filter(refusedUncounted);
            return raced.length > 0
              ? refuse(firstRefusal(raced) as Decision)
              : {
                  ok: false,
                  reason: 'invalid',
                  decision: after[0] as Decision,
                  answer: invalid,
                  error: invalidError,
                };
          },
        );
      },
    );
  }

  /**
   * The layered sequence (docs/design.md#defence-in-depth), first half: the client's budgets and
   * every layer are checked together, before the credential is compared; a refusal of any is the
   * one answer. The second half (`count`) counts a failure everywhere, or resets the client's own
   * budget and the pair and earns trust for a success. A loopback-exempt client is not layered
   * (undefined: take the plain way).
   */
  function checkLayered(
    checks: readonly BudgetCheck[],
    scope: string,
    acct: string | undefined,
  ): MaybePromise<LayeredCheck> | undefined {
    const own = checks[0] as BudgetCheck;
    const key = own.limiter.keyOf(own.subject);
    if (key.exempt || layers === undefined) return undefined;
    const l = layers;
    const dry = limiter.config.dryRun;
    const before = checks.map((c) => limiterStep(c.limiter, 'check', c.subject, scope));
    return mapMaybe(l.check(key.key, acct, scope, before), (lay): LayeredCheck => {
      const refused = firstRefusal(lay.base);
      if (refused !== undefined) return { refused: refuse(withLayer(refused, 'client')) };
      if (lay.refused !== undefined && !dry) return { refused: refuse(lay.refused) };
      // Not `then`: an object with a then() method would pass for a promise.
      const count = (outcome: 'ok' | 'invalid'): MaybePromise<GateResult> => {
        if (outcome === 'ok')
          return mapMaybe(
            l.success(key.key, acct, scope, lay.pairFailures, [
              limiterStep(own.limiter, 'recordSuccess', own.subject, scope),
            ]),
            ({ base: [after], raced }) => {
              const a = after as Decision;
              if (!a.allowed) return refuse(withLayer(a, 'client'));
              if (raced !== undefined && !dry) return refuse(raced);
              return { ok: true, decision: a };
            },
          );
        return mapMaybe(
          l.failure(
            key.key,
            acct,
            scope,
            checks.map((c) => limiterStep(c.limiter, 'recordFailure', c.subject, scope)),
          ),
          ({ base: after, raced }): GateResult => {
            const lost = after.filter(refusedUncounted);
            if (lost.length > 0) return refuse(withLayer(firstRefusal(lost) as Decision, 'client'));
            if (raced !== undefined && !dry) return refuse(raced);
            return {
              ok: false,
              reason: 'invalid',
              decision: after[0] as Decision,
              answer: invalid,
              error: invalidError,
            };
          },
        );
      };
      return { count };
    });
  }

  /** The sequence of an attempt whose outcome is known (with the layers: check, then count). */
  function decideLayered(
    checks: readonly BudgetCheck[],
    outcome: 'ok' | 'invalid',
    scope: string,
    acct: string | undefined,
  ): MaybePromise<GateResult> {
    const checked = checkLayered(checks, scope, acct);
    if (checked === undefined) return plain(checks, outcome, scope);
    return mapMaybe(checked, (c) => (c.refused !== undefined ? c.refused : c.count(outcome)));
  }

  /**
   * The layers' checks for `raw`, when they apply to it (an account, or a scope budget; not a
   * loopback-exempt client): undefined otherwise.
   */
  function layeredFor(
    raw: RawRequest,
    scope: string,
    acct: string | undefined,
  ): MaybePromise<LayeredCheck> | undefined {
    if (layers === undefined || (acct === undefined && !scopeLayer)) return undefined;
    const client = resolve(raw);
    if (client.origin === undefined) {
      const subject = authSubject(client, { exemptLoopback: limiter.config.exemptLoopback });
      return checkLayered([{ limiter, subject }], scope, acct);
    }
    if (o.browserLimiter === undefined) followMain();
    return checkLayered(browser.checks(client), scope, acct);
  }

  /** The sequence without layers: one limiter, or a loopback browser's budgets. */
  function plain(
    checks: readonly BudgetCheck[],
    outcome: 'ok' | 'invalid',
    scope: string,
  ): MaybePromise<GateResult> {
    const first = checks[0] as BudgetCheck;
    return checks.length === 1
      ? decideOne(first.limiter, first.subject, outcome, scope)
      : decideAll(checks, outcome, scope);
  }

  /** A loopback-exempt client's failure is answered late (loopbackPenalty); its success resets. */
  function penalized(result: MaybePromise<GateResult>, found: 'ok' | 'invalid') {
    if (penalty === undefined) return result;
    const p = penalty;
    return mapMaybe(result, (r): MaybePromise<GateResult> => {
      const d = r.decision;
      if (d === undefined || d.reason !== 'exempt') return r;
      if (found === 'ok') {
        p.success(d.key);
        return r;
      }
      return p.delay(r, p.failure(d.key));
    });
  }

  function decide(
    raw: RawRequest,
    outcome: AuthOutcome,
    scopeOverride?: string,
    accountOf?: unknown,
  ): MaybePromise<GateResult> {
    const found = checkOutcome(outcome);
    if (found === 'missing') return missingResult;
    const scope = scopeOverride ?? gateScope;
    const client = resolve(raw);
    const acct = accountLayers ? accountKey(accountOf) : undefined;
    const layered = layers !== undefined && (acct !== undefined || scopeLayer);
    if (client.origin === undefined) {
      const subject = authSubject(client, { exemptLoopback: limiter.config.exemptLoopback });
      const result = layered
        ? decideLayered([{ limiter, subject }], found, scope, acct)
        : decideOne(limiter, subject, found, scope);
      return subject.exempt ? penalized(result, found) : result;
    }
    if (o.browserLimiter === undefined) followMain();
    const checks = browser.checks(client);
    return layered ? decideLayered(checks, found, scope, acct) : plain(checks, found, scope);
  }

  return {
    run(raw: RawRequest, req: Req): MaybePromise<GateResult> {
      const fn = required(verify, 'verify', 'a function', where);
      if (layers === undefined) {
        const outcome = fn(req);
        return isPromise(outcome) ? outcome.then((v) => decide(raw, v)) : decide(raw, outcome);
      }
      // The account is read before the credential is compared (the function may look at the
      // request's body, which verify may consume); with the layers on, the attempt is checked
      // before verify too, so a refused guess never reaches it (a botnet's refused guesses cost
      // no hash). A refused request without credentials is then answered 429, not 401.
      const withAccount = (accountOf: unknown): MaybePromise<GateResult> => {
        const acct = accountLayers ? accountKey(accountOf) : undefined;
        const checked = layeredFor(raw, gateScope, acct);
        if (checked === undefined) {
          const outcome = fn(req);
          return isPromise(outcome)
            ? outcome.then((v) => decide(raw, v, undefined, accountOf))
            : decide(raw, outcome, undefined, accountOf);
        }
        return mapMaybe(checked, (c): MaybePromise<GateResult> => {
          if (c.refused !== undefined) return c.refused;
          const counted = (outcome: AuthOutcome): MaybePromise<GateResult> => {
            const found = checkOutcome(outcome);
            return found === 'missing' ? missingResult : c.count(found);
          };
          const outcome = fn(req);
          return isPromise(outcome) ? outcome.then(counted) : counted(outcome);
        });
      };
      if (account === undefined) return withAccount(undefined);
      const acct = account(req);
      return isPromise(acct) ? acct.then(withAccount) : withAccount(acct);
    },
    decide,
    layers: layers?.limiters ?? [],
    limiter,
    browserLimiter,
    reconfigure(partial: FailureLimiterReconfig): void {
      limiter.reconfigure(partial);
    },
    close(): MaybePromise<void> {
      return closeAll([
        ...(o.limiter === undefined ? [limiter] : []),
        ...(o.browserLimiter === undefined ? [browserLimiter] : []),
        ...(layers === undefined ? [] : [layers]),
        ...(penalty === undefined ? [] : [penalty]),
      ]);
    },
  };
}
