import {
  type ClientOptions,
  type ClientResolver,
  createClientResolver,
  parseTrustedProxies,
} from '../client.js';
import type { Logger } from '../events.js';
import {
  createFailureLimiter,
  type FailureLimiter,
  type FailureLimiterOptions,
  failureLimiterSpec,
} from '../failure-limiter.js';
import { boolean, exclusiveLimiter, hiddenOption, withMethods } from '../options.js';
import { isPromise, type MaybePromise } from '../promise.js';
import { type Warnings, warningsOption } from '../warnings.js';
import { withoutUndefined } from '../without-undefined.js';

/** What a credential check found. */
export type AuthOutcome = 'ok' | 'invalid' | 'missing';

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

/** What every gate takes to find the client (docs/design.md#client-identity) and to report. */
export interface GateClientOptions {
  /** Proxies whose `X-Forwarded-For` is believed. @default [] */
  trustedProxies?: readonly string[];
  /** Believe `X-Real-IP` from a trusted proxy. @default false */
  allowRealIpFallback?: boolean;
  /** Receives the gate's warnings (an untrusted loopback proxy, lockouts, hook failures). */
  logger?: Logger;
  /**
   * Misconfiguration warnings switched off, by code (`{ PORTCULLIS_UNTRUSTED_FORWARDED: false }`);
   * the limiters the gate builds get the same.
   * @default every warning on
   */
  warnings?: Warnings;
}

/** The client options as parsed: each given, or undefined. */
export type ParsedClientOptions = {
  readonly [K in keyof GateClientOptions]?: GateClientOptions[K] | undefined;
};

/** The client rules of a gate's client options (those given). */
export function gateClientRules(o: ParsedClientOptions): ClientOptions {
  return withoutUndefined({
    trustedProxies: o.trustedProxies,
    allowRealIpFallback: o.allowRealIpFallback,
    logger: o.logger,
    warnings: o.warnings,
  });
}

/** The one client resolver of a gate, from its client options. */
export function gateResolver(o: ParsedClientOptions): ClientResolver {
  return createClientResolver(gateClientRules(o));
}

/**
 * The failure limiter a gate builds when none is given: `defaults` (a preset), then the gate's
 * logger and warnings (so its lockout warnings reach the gate's logger), then the flat options.
 */
export function gateLimiter(
  defaults: FailureLimiterOptions,
  o: ParsedClientOptions,
  own: FailureLimiterOptions,
): FailureLimiter {
  return createFailureLimiter({
    ...defaults,
    ...withoutUndefined({ logger: o.logger, warnings: o.warnings }),
    ...own,
  });
}

/** Extra option names an adapter may accept on top of a gate's (its own translation options). */
export type AdapterOptionSpec = Record<
  string,
  (value: unknown, fail: (expected: string) => never) => unknown
>;

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

/** Closes `limiters`, synchronously when every one closes so. */
export function closeAll(limiters: readonly { close(): MaybePromise<void> }[]): MaybePromise<void> {
  const closing = limiters.map((limiter) => limiter.close());
  return closing.some(isPromise) ? Promise.all(closing).then(() => undefined) : undefined;
}

/** Validates what `verify` returned; anything else is a programming error. */
export function checkOutcome(outcome: unknown): AuthOutcome {
  if (outcome === 'ok' || outcome === 'invalid' || outcome === 'missing') return outcome;
  throw new TypeError(
    `Portcullis: verify() must return 'ok', 'invalid' or 'missing', got ${String(outcome)}`,
  );
}
