import {
  type Clock,
  type Logger,
  type MemoryStore,
  PortcullisConfigError,
  systemClock,
  type Timers,
} from '@portcullis/core';
import { parseOptions, requiredOption, safeLogger } from '@portcullis/core/adapter';
import { fallbackStore } from './fallback.js';
import {
  durabilitySpec,
  localDenySpec,
  nested,
  type OnError,
  type RedisStoreOptions,
  type SendCommand,
  type Subscribe,
  spec,
  WHERE,
} from './options.js';

/** {@link RedisStoreOptions} checked, with every default applied. */
export interface Settings {
  readonly send: SendCommand;
  readonly prefix: string;
  readonly policy: OnError;
  readonly timeoutMs: number;
  readonly probeMs: number;
  readonly logger: Logger | undefined;
  readonly scriptClock: Clock | undefined;
  readonly clock: Clock;
  readonly timers: Timers | undefined;
  /** The fallback store, made here so that its option errors come in the order they always did. */
  readonly local: MemoryStore;
  readonly localDeny: { readonly maxEntries: number; readonly maxStaleMs: number } | undefined;
  readonly durability: { readonly replicas: number; readonly timeoutMs: number } | undefined;
  readonly subscribe: Subscribe | undefined;
}

/**
 * Checks `options` and applies the defaults.
 * @throws {PortcullisConfigError} for a missing `sendCommand`, a wrong or unknown option
 */
export function resolveSettings(options: RedisStoreOptions): Settings {
  const o = parseOptions(options, spec, WHERE);
  const timeoutMs = o.timeoutMs ?? 1000;
  return {
    send: requiredOption(o.sendCommand, 'sendCommand', 'a function', WHERE) as SendCommand,
    prefix: o.prefix ?? 'portcullis:',
    policy: o.onError ?? 'fallback',
    timeoutMs,
    probeMs: o.probeIntervalMs ?? 1000,
    // The user's logger is called on paths that must always answer (an outage, a failed
    // subscribe): a logger that throws must not turn a decision into a rejection or a crash.
    logger: safeLogger(o.logger),
    scriptClock: o.clock,
    clock: o.clock ?? systemClock,
    timers: o.timers,
    local: fallbackStore(o.clock, o.timers, o.fallback),
    localDeny: localDeny(o.localDeny ?? true),
    durability: durability(o.durability ?? false, timeoutMs),
    subscribe: o.subscribe as Subscribe | undefined,
  };
}

function localDeny(deny: NonNullable<RedisStoreOptions['localDeny']>): Settings['localDeny'] {
  if (deny === false) return undefined;
  const d = nested('localDeny', () =>
    parseOptions(deny === true ? {} : deny, localDenySpec, `${WHERE}.localDeny`),
  );
  return { maxEntries: d.maxEntries ?? 10_000, maxStaleMs: d.maxStaleMs ?? 1000 };
}

function durability(
  given: NonNullable<RedisStoreOptions['durability']>,
  storeTimeoutMs: number,
): Settings['durability'] {
  if (given === false) return undefined;
  const d = nested('durability', () =>
    parseOptions(given === true ? {} : given, durabilitySpec, `${WHERE}.durability`),
  );
  if (d.timeoutMs !== undefined && d.timeoutMs > storeTimeoutMs) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_TIMEOUT_MS',
      'durability.timeoutMs',
      `${WHERE}: durability: option "timeoutMs" must be at most the store's timeoutMs (${storeTimeoutMs}), got ${d.timeoutMs}`,
    );
  }
  return { replicas: d.replicas ?? 1, timeoutMs: Math.min(d.timeoutMs ?? 50, storeTimeoutMs) };
}
