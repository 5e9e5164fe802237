import type { Clock, Timers } from '../clock.js';
import { PortcullisConfigError } from '../errors.js';
import type { Logger } from '../events.js';
import {
  createLayerLimiter,
  type FailureLimiter,
  type StartedLockout,
} from '../failure-limiter.js';
import { callSafely, reportHookError } from '../safe-call.js';
import type { Store } from '../store.js';
import type { Warnings } from '../warnings.js';
import { withoutUndefined } from '../without-undefined.js';
import type { AuthLayerOptions, LockoutEvent } from './auth-layer-options.js';

/** The failure limiters of the layers that are on (undefined: that layer is off). */
export interface LayerLimiters {
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

const HOUR = 3_600_000;

/** A layer's numbers, windows and lockouts an hour unless given. */
const layerNumbers = (maxAttempts: number, windowMs = HOUR, lockoutMs = HOUR) => ({
  maxAttempts,
  windowMs,
  lockoutMs,
});

/**
 * Each layer's limiter, over `store`, with its numbers from the options and the defaults
 * (docs/design.md#defence-in-depth). The pair counts consecutive failures: its window is its
 * lockout's length. The pair and spray escalate as the client limiter does; the soft layers
 * (account, scope) do not, since their lockouts refuse only untrusted clients. `store` is the
 * gate's sibling store of its layers (`siblingOf`), which no other code reads.
 * @throws {PortcullisConfigError} when `store` cannot hold what the layers on need
 */
export function buildLayerLimiters(
  o: AuthLayerOptions<unknown>,
  setup: LayerSetup,
  store: Store,
): LayerLimiters {
  const client = setup.client;
  const name = client.config.name;
  const escalate = client.escalate;
  const build = (
    layer: 'pair' | 'account' | 'spray' | 'scope',
    escalates: boolean,
    numbers: { maxAttempts: number; windowMs: number; lockoutMs: number },
  ) =>
    createLayerLimiter(
      {
        store,
        exemptLoopback: false,
        ipv6Subnet: false,
        ...withoutUndefined({
          logger: setup.logger,
          warnings: setup.warnings,
          escalate: escalates ? escalate : undefined,
        }),
        ...numbers,
        name: `${name}.${layer}`,
      },
      layer,
      // The gate's own sibling of the client store: nothing else reads its keys one by one.
      true,
    );
  const limits = o.accountLimits ?? {};
  const on = <T>(v: T | false | undefined): T | undefined =>
    limits === false || v === false ? undefined : (v ?? ({} as T));
  const pair = on(limits === false ? false : limits.pair);
  const acct = on(limits === false ? false : limits.account);
  const spray = on(limits === false ? false : limits.spray);
  const scope = o.scopeBudget === false ? undefined : o.scopeBudget;
  const built: LayerLimiters = {
    pair:
      pair &&
      build('pair', true, layerNumbers(pair.maxAttempts ?? 20, pair.lockoutMs, pair.lockoutMs)),
    account:
      acct &&
      build('account', false, layerNumbers(acct.maxAttempts ?? 100, acct.windowMs, acct.lockoutMs)),
    spray:
      spray &&
      build(
        'spray',
        true,
        layerNumbers(spray.maxAccounts ?? 10, spray.windowMs ?? 600_000, spray.lockoutMs),
      ),
    scope: scope && build('scope', false, scope),
  };
  checkLayerStore(built, store);
  return built;
}

/** Refuses a store without the operations the layers that are on depend on. */
function checkLayerStore(l: LayerLimiters, store: Store): void {
  const active = Object.values(l).some((x) => x !== undefined);
  if (active && (typeof store.trust !== 'function' || typeof store.trusted !== 'function'))
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_STORE',
      'store',
      'authGuard: the account limits and scopeBudget need a store with trust() and trusted() (MemoryStore and RedisStore have them)',
    );
  if (l.spray !== undefined && typeof store.recordDistinct !== 'function')
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_STORE',
      'store',
      'authGuard: accountLimits.spray needs a store with recordDistinct() (MemoryStore and RedisStore have it)',
    );
}

/** Reports a started lockout to `onLockout`, naming the account when the layer knows it. */
export type LockoutReport = (started: StartedLockout, account?: string) => void;

/**
 * The report of started lockouts to the user's `onLockout`: the event carries when the lockout
 * ends by the gate's clock; a hook that throws is reported (PORTCULLIS_HOOK_ERROR) and the lockout
 * stands.
 */
export function lockoutReporter(
  onLockout: (event: LockoutEvent) => void,
  clock: Clock,
  logger: Logger | undefined,
): LockoutReport {
  return (s, account) => {
    const event: LockoutEvent = {
      layer: s.layer,
      scope: s.scope,
      key: s.key,
      ...(account !== undefined && { account }),
      lockoutMs: s.lockoutMs,
      until: clock.now() + s.retryAfterMs,
    };
    callSafely(onLockout, [event], (err) =>
      reportHookError(
        logger,
        { hook: 'onLockout', err },
        'Portcullis: onLockout threw; the lockout stands',
      ),
    );
  };
}

/**
 * Follows the lockouts the client limiter and every layer start, into `report`; returns what
 * stops following. The account is read back from the layer's key; a key too long to keep (a
 * client key and an account together over 256 characters) is a digest, and then the event names
 * none.
 */
export function watchLayerLockouts(
  client: FailureLimiter,
  l: LayerLimiters,
  report: LockoutReport,
): (() => void)[] {
  const accountIn = (key: string) =>
    key.startsWith('account:') ? key.slice('account:'.length) : undefined;
  const split = (s: StartedLockout) => {
    const at = s.key.indexOf('\u0000');
    if (at < 0) report(s);
    else report({ ...s, key: s.key.slice(0, at) }, accountIn(s.key.slice(at + 1)));
  };
  const stops = [client.watchLockouts((s) => report(s))];
  if (l.pair !== undefined) stops.push(l.pair.watchLockouts(split));
  if (l.account !== undefined)
    stops.push(l.account.watchLockouts((s) => report(s, accountIn(s.key))));
  for (const x of [l.spray, l.scope])
    if (x !== undefined) stops.push(x.watchLockouts((s) => report(s)));
  return stops;
}
