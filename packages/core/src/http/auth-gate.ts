import type { ClientInfo, RawRequest } from '../client.js';
import {
  type FailureLimiter,
  type FailureLimiterOptions,
  type FailureLimiterReconfig,
  normalizeScope,
} from '../failure-limiter.js';
import { type MaybePromise, mapMaybe } from '../promise.js';
import { required } from '../options.js';
import { type AccessList, type AccessMatch, accessMatchOf } from '../access/access-list.js';
import type { AccessRule } from '../access/matcher.js';
import { accessDeniedError } from '../error-shapes.js';
import { parseIp } from '../ip.js';
import { denial } from './access-gate.js';
import type { GateResult } from './answer.js';
import { accountKey } from './account-key.js';
import { attemptBudgets } from './attempt-budgets.js';
import type { AuthLayerOptions } from './auth-layer-options.js';
import {
  type AuthGateParts,
  authGateParts,
  type GateSetup,
  parseAuthOptions,
} from './auth-gate-setup.js';
import type { AuthLayers } from './auth-layers.js';
import type { Ipv6Network } from '../ipv6-networks.js';
import { checkLayered, countChecked, decideOne, plainSequence } from './auth-sequence.js';
import type { BrowserBudgetOptions, BudgetCheck } from './browser-budget.js';
import {
  type AuthOutcome,
  checkOutcome,
  closeAll,
  flatLimiterOptions,
  type GateClientOptions,
} from './gate-options.js';
import { authRefusals } from './refusals.js';

export type { AuthOutcome } from './gate-options.js';
export type { GateSetup } from './auth-gate-setup.js';

/** Options of {@link createAuthGate} (and of every adapter's `authGuard`). */
export interface AuthGateOptions<Req>
  extends FailureLimiterOptions,
    AuthLayerOptions<Req>,
    GateClientOptions {
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
  /**
   * Budgets per IPv6 network beside each client's own (docs/design.md#ipv6-networks): failures of
   * every client in one network count together, so rotating through a /48 does not multiply the
   * guesses. `true`: a /56 with 4 × `maxAttempts`, a /48 with 16 ×. A success clears only the
   * client's own count. @default false
   */
  ipv6Networks?: boolean | readonly Ipv6Network[];
  /**
   * Operators' deny rules (docs/design.md#access-lists), matched before `verify`: a denied client,
   * account or origin is answered 403 `ACCESS_DENIED` with the reason, its credential never
   * compared. Allow rules do not exempt from lockouts: guesses are counted wherever they come from.
   */
  access?: AccessList;
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
  /**
   * The IPv6 networks' limiters, narrowest first (empty when `ipv6Networks` is off): their
   * `lockouts()` list the networks locked, `reset(networkKey)` lifts one.
   */
  readonly networks: readonly FailureLimiter[];
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
  const o = parseAuthOptions(options, setup, where);
  const own = flatLimiterOptions(o, where);
  const verify = (
    (setup.needsVerify ?? true) ? required(o.verify, 'verify', 'a function', where) : o.verify
  ) as ((req: Req) => MaybePromise<AuthOutcome>) | undefined;
  const p = authGateParts(o, own, setup, where);
  const { limiter, layers } = p;
  const r = authRefusals();
  const account = o.account as ((req: Req) => MaybePromise<string | undefined>) | undefined;
  const gateScope = normalizeScope(o.scope);

  const budgets = attemptBudgets(p);
  const access = accessMatchOf(o.access);

  /**
   * The deny or allow rule of an attempt. An allow rule changes nothing here: guesses from an
   * allowed network are still counted and locked out (docs/design.md#access-lists).
   */
  function ruleOf(client: ClientInfo, accountOf: unknown): MaybePromise<AccessRule | undefined> {
    if (access === undefined) return undefined;
    return access.match({
      ip: client.ip === undefined ? undefined : parseIp(client.ip),
      origin: client.origin,
      account: typeof accountOf === 'string' ? accountOf : undefined,
    });
  }

  function deniedResult(rule: AccessRule, client: ClientInfo): GateResult {
    (access as AccessMatch).denied(rule, where);
    const left =
      rule.until === undefined ? 0 : Math.max(1, rule.until - (access as AccessMatch).now());
    const { decision, answer } = denial(
      rule,
      client.ip ?? 'unknown',
      limiter.config.maxAttempts,
      left,
    );
    return {
      ok: false,
      reason: 'denied',
      decision,
      answer,
      error: accessDeniedError(rule.reason, left),
    };
  }

  /** Whether the layers apply to an attempt: it names an account, or a scope budget is on. */
  const layeredFor = (acct: string | undefined): AuthLayers | undefined =>
    acct !== undefined || p.scopeLayer ? layers : undefined;

  /** The lockout sequence of `client`'s attempt (see {@link AuthGate.decide}). */
  function decideFor(
    client: ClientInfo,
    outcome: AuthOutcome,
    scopeOverride?: string,
    accountOf?: unknown,
  ): MaybePromise<GateResult> {
    const found = checkOutcome(outcome);
    if (found === 'missing') return r.missing;
    const scope = scopeOverride ?? gateScope;
    const acct = p.accountLayers ? accountKey(accountOf) : undefined;
    const l = layeredFor(acct);
    if (client.origin === undefined) {
      const subject = budgets.subject(client);
      if (p.networks !== undefined && !subject.exempt)
        return sequenceOf(budgets.client(client, subject), l, found, scope, acct);
      // The plain login (no layers) takes no array of budgets: it is the path every user walks.
      const checked =
        l && checkLayered(r, l, limiter.config.dryRun, [{ limiter, subject }], scope, acct);
      const result =
        checked === undefined
          ? decideOne(r, limiter, subject, found, scope)
          : countChecked(checked, found);
      return subject.exempt ? penalized(p, result, found) : result;
    }
    return sequenceOf(budgets.browser(client), l, found, scope, acct);
  }

  const decide = (
    raw: RawRequest,
    outcome: AuthOutcome,
    scopeOverride?: string,
    accountOf?: unknown,
  ): MaybePromise<GateResult> => decideFor(p.resolve(raw), outcome, scopeOverride, accountOf);

  /** The sequence over several budgets, layered when the layers apply. */
  function sequenceOf(
    checks: readonly BudgetCheck[],
    l: AuthLayers | undefined,
    found: 'ok' | 'invalid',
    scope: string,
    acct: string | undefined,
  ): MaybePromise<GateResult> {
    // Undefined also for a loopback-exempt client, which the layers never count.
    const checked = l && checkLayered(r, l, limiter.config.dryRun, checks, scope, acct);
    return checked === undefined
      ? plainSequence(r, checks, found, scope)
      : countChecked(checked, found);
  }

  /**
   * With the layers on, the account is read before the credential is compared (the function may
   * look at the request's body, which verify may consume), and the attempt is checked before
   * verify too, so a refused guess never reaches it (a botnet's refused guesses cost no hash). A
   * refused request without credentials is then answered 429, not 401.
   */
  function runLayered(
    client: ClientInfo,
    req: Req,
    fn: (req: Req) => MaybePromise<AuthOutcome>,
    accountOf: unknown,
  ): MaybePromise<GateResult> {
    const acct = p.accountLayers ? accountKey(accountOf) : undefined;
    const l = layeredFor(acct);
    const checked =
      l && checkLayered(r, l, limiter.config.dryRun, budgets.of(client), gateScope, acct);
    if (checked === undefined)
      return mapMaybe(fn(req), (v) => decideFor(client, v, undefined, accountOf));
    return mapMaybe(checked, (c): MaybePromise<GateResult> => {
      if (c.refused !== undefined) return c.refused;
      return mapMaybe(fn(req), (outcome) => {
        const found = checkOutcome(outcome);
        return found === 'missing' ? r.missing : c.count(found);
      });
    });
  }

  /** The account `req` names (undefined without an `account` option), read once per request. */
  const accountFor = (req: Req): MaybePromise<unknown> =>
    account === undefined ? undefined : account(req);

  /** An attempt whose account is known: refused by a deny rule, or run as without rules. */
  function ruled(
    client: ClientInfo,
    req: Req,
    fn: (req: Req) => MaybePromise<AuthOutcome>,
    accountOf: unknown,
  ): MaybePromise<GateResult> {
    return mapMaybe(ruleOf(client, accountOf), (rule) => {
      if (rule !== undefined && rule.action === 'deny') return deniedResult(rule, client);
      if (layers === undefined)
        return mapMaybe(fn(req), (v) => decideFor(client, v, undefined, accountOf));
      return runLayered(client, req, fn, accountOf);
    });
  }

  return {
    run(raw: RawRequest, req: Req): MaybePromise<GateResult> {
      const fn = required(verify, 'verify', 'a function', where);
      if (access !== undefined)
        return mapMaybe(accountFor(req), (a) => ruled(p.resolve(raw), req, fn, a));
      if (layers === undefined) return mapMaybe(fn(req), (v) => decide(raw, v));
      return mapMaybe(accountFor(req), (a) => runLayered(p.resolve(raw), req, fn, a));
    },
    decide:
      access === undefined
        ? decide
        : (raw, outcome, scope, accountOf) => {
            const client = p.resolve(raw);
            return mapMaybe(ruleOf(client, accountOf), (rule) =>
              rule !== undefined && rule.action === 'deny'
                ? deniedResult(rule, client)
                : decideFor(client, outcome, scope, accountOf),
            );
          },
    layers: layers?.limiters ?? [],
    limiter,
    networks: p.networks?.limiters ?? [],
    browserLimiter: p.browserLimiter,
    reconfigure(partial: FailureLimiterReconfig): void {
      limiter.reconfigure(partial);
    },
    close(): MaybePromise<void> {
      return closeAll([
        ...(o.limiter === undefined ? [limiter] : []),
        ...(p.browserFollows ? [p.browserLimiter] : []),
        ...(layers === undefined ? [] : [layers]),
        ...(p.penalty === undefined ? [] : [p.penalty]),
      ]);
    },
  };
}

/** A loopback-exempt client's failure is answered late (loopbackPenalty); its success resets. */
function penalized(
  p: AuthGateParts,
  result: MaybePromise<GateResult>,
  found: 'ok' | 'invalid',
): MaybePromise<GateResult> {
  const penalty = p.penalty;
  if (penalty === undefined) return result;
  return mapMaybe(result, (r): MaybePromise<GateResult> => {
    const d = r.decision;
    if (d === undefined || d.reason !== 'exempt') return r;
    if (found === 'ok') {
      penalty.success(d.key);
      return r;
    }
    return penalty.delay(r, penalty.failure(d.key));
  });
}
