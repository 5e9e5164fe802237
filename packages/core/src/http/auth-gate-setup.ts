import { accessSpec } from './access-gate.js';
import type { ClientResolver } from '../client.js';
import { PortcullisConfigError } from '../errors.js';
import type { FailureLimiter, FailureLimiterOptions } from '../failure-limiter.js';
import { failureLimiterOption } from '../failure-limiter.js';
import { ipv6NetworksOption, checkNetworksWider } from '../ipv6-networks.js';
import { func, integer, objectOption, parseOptions } from '../options.js';
import { presets } from '../presets.js';
import type { AuthLayerOptions } from './auth-layer-options.js';
import { authLayerSpec } from './auth-layer-options.js';
import { AuthLayers } from './auth-layers.js';
import {
  type BrowserBudgetOptions,
  type BrowserBudgets,
  browserBudgets,
  browserLimiterFor,
} from './browser-budget.js';
import {
  type AdapterOptionSpec,
  clientOptionSpec,
  flatLimiterSpec,
  gateLimiter,
  gateResolver,
} from './gate-options.js';
import { LoopbackPenalty } from './loopback-penalty.js';
import { NetworkBudgets } from './network-budgets.js';

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

/** A string (blank means the default scope, as docs/design.md#failure-limiter says). */
const stringOption = (value: unknown, fail: (expected: string) => never): string =>
  typeof value === 'string' ? value : fail('a string');

const browserBudgetOption = (value: unknown, fail: (expected: string) => never) =>
  parseOptions(
    objectOption<BrowserBudgetOptions>(value, fail),
    { perSite: integer(1), allOrigins: integer(1) },
    'browserBudget',
  );

/** Every option an auth gate takes, beside the adapter's own. */
const authGateSpec = {
  verify: func,
  scope: stringOption,
  limiter: failureLimiterOption,
  ...flatLimiterSpec,
  browserLimiter: failureLimiterOption,
  browserBudget: browserBudgetOption,
  ipv6Networks: ipv6NetworksOption,
  ...authLayerSpec,
  access: accessSpec.access,
  ...clientOptionSpec,
};

/** An auth gate's options, checked. */
export type ParsedAuthOptions = ReturnType<typeof parseAuthOptions>;

/** @throws {PortcullisConfigError} for a wrong or unknown option */
export function parseAuthOptions(options: unknown, setup: GateSetup, where: string) {
  return parseOptions(options, { ...setup.extra, ...authGateSpec }, where);
}

/** What an auth gate is made of, built from its options. */
export interface AuthGateParts {
  /** The limiter for non-browser clients (given, or built with `presets.gatewayAuth`). */
  readonly limiter: FailureLimiter;
  /** The limiter for requests with an `Origin`. */
  readonly browserLimiter: FailureLimiter;
  /** Whether the browser limiter is the gate's own, following the main one's numbers. */
  readonly browserFollows: boolean;
  /** The loopback browser budgets over the browser limiter. */
  readonly browser: BrowserBudgets;
  /** The defence-in-depth layers, when any is on. */
  readonly layers: AuthLayers | undefined;
  /** Whether attempts' accounts are read and limited. */
  readonly accountLayers: boolean;
  /** Whether the scope budget is on (every attempt is layered then). */
  readonly scopeLayer: boolean;
  readonly penalty: LoopbackPenalty | undefined;
  /** The IPv6 network budgets, when `ipv6Networks` is on. */
  readonly networks: NetworkBudgets | undefined;
  readonly resolve: ClientResolver;
}

/**
 * The limiters, budgets, layers and penalty of an auth gate. The gate's logger also receives the
 * lockout warnings of the limiters it builds.
 * @throws {PortcullisConfigError} for options that contradict each other
 */
export function authGateParts(
  o: ParsedAuthOptions,
  own: FailureLimiterOptions,
  setup: GateSetup,
  where: string,
): AuthGateParts {
  const limiter = o.limiter ?? gateLimiter(presets.gatewayAuth, o, own);
  const lockoutLogger = limiter.logger ?? o.logger;
  // Browser lockouts live beside the main limiter's store; they go with the gate only when the gate
  // built that store (nothing else can reach it).
  const ownsStore = o.limiter === undefined && own.store === undefined;
  const browserLimiter = o.browserLimiter ?? browserLimiterFor(limiter, lockoutLogger, ownsStore);
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
  const scopeLayer = o.scopeBudget !== undefined && o.scopeBudget !== false;
  const layers =
    accountsOn || scopeLayer || o.onLockout !== undefined
      ? new AuthLayers(
          {
            ...o,
            ...(!accountsOn && { accountLimits: false as const }),
          } as AuthLayerOptions<unknown>,
          {
            client: limiter,
            logger: lockoutLogger,
            warnings: o.warnings,
            clock: own.clock,
            timers: own.timers,
          },
        )
      : undefined;
  if (layers !== undefined && o.browserLimiter === undefined) layers.watch(browserLimiter);
  let networks: NetworkBudgets | undefined;
  if (o.ipv6Networks !== undefined && o.ipv6Networks !== false) {
    checkNetworksWider(o.ipv6Networks, limiter.config.ipv6Subnet, where);
    networks = new NetworkBudgets(limiter, o.ipv6Networks);
    for (const l of networks.limiters) layers?.watch(l);
  }
  return {
    limiter,
    browserLimiter,
    browserFollows: o.browserLimiter === undefined,
    browser: browserBudgets(browserLimiter, o.browserBudget ?? {}),
    layers,
    accountLayers: accountsOn && layers !== undefined,
    scopeLayer,
    penalty:
      o.loopbackPenalty === undefined || o.loopbackPenalty === false
        ? undefined
        : new LoopbackPenalty(o.loopbackPenalty, own.timers),
    networks,
    resolve: gateResolver(o),
  };
}
