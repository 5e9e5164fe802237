import type { Logger } from './events.js';
import type {
  AuthLayer,
  EscalateOptions,
  FailureLimiter,
  FailureLimiterOptions,
} from './failure-limiter.js';
import { boundedKey } from './keys.js';
import { claimName, type LimiterStore, limiterSpec, limiterStore } from './limiter-store.js';
import {
  boolean,
  duration,
  either,
  integer,
  objectOption,
  type OptionCheck,
  oneOf,
  parseOptions,
  withMethods,
} from './options.js';
import { safeLogger } from './safe-call.js';
import type { EscalateRule, FailureRule, Store } from './store.js';
import { withoutUndefined } from './without-undefined.js';

/** The options of {@link createFailureLimiter}, checked the same way wherever they are accepted (gates take them flat). */
export const failureLimiterSpec = {
  maxAttempts: integer(1),
  windowMs: duration(1),
  lockoutMs: duration(1),
  exemptLoopback: boolean,
  ipv6Subnet: either(integer(1, 128), oneOf([false]), 'an integer from 1 to 128 or false'),
  maxEntries: integer(1),
  store: withMethods<Store>('checkFailures', 'recordFailure', 'recordSuccess', 'delete'),
  ...limiterSpec,
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

/** The numbers a failure limiter runs under: what its `config` shows, changed by `reconfigure`. */
export interface FailureConfig {
  maxAttempts: number;
  windowMs: number;
  lockoutMs: number;
  exemptLoopback: boolean;
  ipv6Subnet: number | false;
  dryRun: boolean;
  name: string;
}

/** What a failure limiter is built from, once its options are checked and its store chosen. */
export interface FailureSetup extends LimiterStore {
  readonly config: FailureConfig;
  readonly escalate: EscalateRule | undefined;
  readonly logger: Logger | undefined;
  /** The layer its earned lockouts are listed, logged and published as. */
  readonly earned: Exclude<AuthLayer, 'ban'>;
  /**
   * Its memory store is one that no other code reads key by key (an auth gate's sibling store of
   * its layers): the limiter may keep each scope in a table there, as a private store does.
   */
  readonly tabled: boolean;
}

/**
 * Checks `options`, applies the defaults and picks the store: a private one needs no namespace, a
 * shared one gets the limiter's name in every key (and warns when another limiter of that name
 * runs other numbers there).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function resolveFailureSetup(
  options: FailureLimiterOptions | undefined,
  earned: Exclude<AuthLayer, 'ban'>,
  tabled = false,
): FailureSetup {
  const o = parseOptions(options, failureLimiterSpec, 'createFailureLimiter');
  const config: FailureConfig = {
    maxAttempts: o.maxAttempts ?? 10,
    windowMs: o.windowMs ?? 60_000,
    lockoutMs: o.lockoutMs ?? 300_000,
    exemptLoopback: o.exemptLoopback ?? true,
    ipv6Subnet: (o.ipv6Subnet ?? 64) as number | false,
    dryRun: o.dryRun ?? false,
    name: o.name ?? 'auth',
  };
  const escalate = escalateRule(o.escalate as EscalateOptions | false | undefined);
  const { store, own, namespace } = limiterStore(o, config.name, 'createFailureLimiter');
  const logger = safeLogger(o.logger);
  if (!own)
    claimName(
      store,
      config.name,
      `${config.maxAttempts} failures per ${config.windowMs} ms, ${config.lockoutMs} ms lockout`,
      logger,
      o.warnings,
    );
  return { config, escalate, store, own, namespace, logger, earned, tabled };
}

/** The rule every store call takes: the numbers in force, and the escalation if any. */
export function failureRule(
  config: FailureConfig,
  escalate: EscalateRule | undefined,
): FailureRule {
  const { maxAttempts, windowMs, lockoutMs } = config;
  return withoutUndefined({ maxAttempts, windowMs, lockoutMs, escalate });
}
