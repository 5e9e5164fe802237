import type { AuthLayer } from '../failure-limiter.js';
import { PortcullisConfigError } from '../errors.js';
import { duration, integer, objectOption, parseOptions } from '../options.js';
import type { MaybePromise } from '../promise.js';

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

type Fail = (expected: string) => never;

const objectOf = <T>(value: unknown, fail: Fail): T =>
  objectOption<T>(value, fail, 'an object or false');

function layerOption<T>(spec: Parameters<typeof parseOptions>[1], where: string) {
  return (value: unknown, fail: Fail): T | false =>
    value === false ? false : (parseOptions(objectOf<T>(value, fail), spec, where) as T);
}

const pairSpec = { maxAttempts: integer(1), lockoutMs: duration(1) };
const accountSpec = {
  maxAttempts: integer(1),
  windowMs: duration(1),
  lockoutMs: duration(1),
};
const spraySpec = {
  maxAccounts: integer(1, 1000),
  windowMs: duration(1),
  lockoutMs: duration(1),
};

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
