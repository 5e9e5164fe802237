// RedisStore's options: their public types and the checks that parse them once, at construction.
import {
  type Clock,
  type Logger,
  type MemoryStoreOptions,
  PortcullisConfigError,
  type Timers,
} from '@portcullis/core';
import {
  functionOption,
  integerOption,
  methodsOption,
  type OptionCheck,
  oneOfOption,
} from '@portcullis/core/adapter';
import type { LocalDenyOptions } from './local-deny.js';

/** A string (possibly empty: an empty prefix is legitimate on a dedicated Redis database). */
export const string: OptionCheck<string> = (value, fail) =>
  typeof value === 'string' ? value : fail('a string');

/** A plain object (its contents are validated by whoever consumes it). */
export function plainObject<T>(): OptionCheck<T> {
  return (value, fail) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as T)
      : fail('an object');
}

/**
 * Sends one Redis command and resolves to its reply; a Redis error reply rejects. `args` are the
 * command and its arguments as strings (`['EVALSHA', sha, '1', key, …]`); `key` is the key the
 * command touches (for cluster clients that route by key), `undefined` for `PING` and `SCAN`.
 * `WAIT` (only with `durability`) names no key of its own: `key` is the key whose write it waits
 * for, and the command must go to that key's node on the connection that sent the write (one
 * connection per node, as every client below keeps).
 *
 * - ioredis / iovalkey: `(args) => redis.call(args[0], ...args.slice(1))`
 * - node-redis: `(args) => client.sendCommand(args)`
 * - node-redis cluster: `(args, key) => cluster.sendCommand(key, false, args)`
 * - ioredis Cluster: `cluster.call(…)`, but a `WAIT` through a pipeline with the key (see the
 *   README, "Clients": a keyless command alone goes to a random node)
 */
export type SendCommand = (args: string[], key: string | undefined) => Promise<unknown>;

/**
 * What the store answers while Redis fails (an error reply, a lost connection, a malformed reply or
 * no answer within `timeoutMs`):
 * - `fallback`: an in-process `MemoryStore` applies the same rules; decisions carry reason `'fallback'`.
 * - `open`: allow (reason `'store-error'`, `allowed: true`), counting nothing.
 * - `closed`: refuse (reason `'store-error'`, `allowed: false`); adapters answer 503, not 429.
 *
 * Under every policy a lockout this process has seen (from Redis or recorded by the fallback)
 * keeps refusing until it ends: a store error never unlocks anyone, and neither does a Redis that
 * comes back without the lockout (restarted empty, failed over to a stale replica).
 */
export type OnError = 'fallback' | 'open' | 'closed';

/** Stops a subscription made by {@link Subscribe}; `close()` calls it. */
export type Unsubscribe = () => unknown;

/**
 * Subscribes a connection OF ITS OWN (a subscribed Redis connection can send nothing else) to
 * `channel` and calls `onMessage` with each message's text. Called once, by the constructor. When
 * it returns (or resolves to) a function, `close()` calls it to unsubscribe and disconnect.
 *
 * - ioredis / iovalkey:
 *   `(channel, onMessage) => { const sub = redis.duplicate(); sub.on('message', (ch, m) => ch === channel && onMessage(m)); sub.subscribe(channel); return () => sub.disconnect(); }`
 * - node-redis 5, 6: `async (channel, onMessage) => { const sub = client.duplicate(); await sub.connect(); await sub.subscribe(channel, onMessage); return () => sub.destroy(); }` (node-redis 4: `sub.disconnect()`)
 * - ioredis Cluster: the same with `cluster.duplicate()` (classic pub/sub reaches every node).
 */
export type Subscribe = (channel: string, onMessage: (message: string) => void) => unknown;

export type { LocalDenyOptions } from './local-deny.js';

/**
 * Options of `RedisStore`'s `durability`: after a decision that starts a lockout or a ban, the store
 * sends `WAIT replicas timeoutMs` to the key's node and returns the decision once it answered.
 * Every number is an integer.
 */
export interface DurabilityOptions {
  /** How many replicas must have the lockout before the decision returns, 1 or more. @default 1 */
  replicas?: number;
  /**
   * The longest the `WAIT` blocks, at most the store's `timeoutMs` (the decision as a whole never
   * waits longer than that: the `WAIT` gets what the script call left of it). @default 50
   */
  timeoutMs?: number;
}

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** Sends one command through your Redis client (see {@link SendCommand}). Required. */
  sendCommand: SendCommand;
  /** Prepended to every key. Use a hash tag (`{portcullis}:`) to keep every key on one Cluster shard. @default 'portcullis:' */
  prefix?: string;
  /** What to answer while Redis fails. @default 'fallback' */
  onError?: OnError;
  /**
   * The longest a decision waits for Redis before `onError` decides: an integer from 1 to
   * 2^31 − 1 (the longest a Node timer waits). While a call is pending its timer keeps the process
   * alive, so a script awaiting a decision from a hung Redis gets the `onError` answer.
   * @default 1000
   */
  timeoutMs?: number;
  /**
   * While Redis is failing, decisions go straight to the `onError` policy (no waiting) and one
   * `PING` every `probeIntervalMs` checks whether Redis is back. An integer from 1 to 2^31 − 1.
   * @default 1000
   */
  probeIntervalMs?: number;
  /**
   * Options of the in-process `MemoryStore` used as fallback. Its `maxEntries` also bounds the
   * table of lockouts this process has seen. @default {}
   */
  fallback?: MemoryStoreOptions;
  /** Receives one error when an outage starts and one warning when Redis answers again. */
  logger?: Logger;
  /**
   * FOR DETERMINISTIC TESTS ONLY: when given, the script takes `now` from this clock (sent as an
   * argument) instead of the Redis server's `TIME`, so processes with skewed clocks would disagree.
   * It also times the outage probe and is the fallback store's clock. @default the Redis server clock
   */
  clock?: Clock;
  /**
   * The local deny table: a refusal Redis answered that holds for every later call until a known
   * instant (an active lockout, a fixed window with nothing left, a sliding window blocked for a
   * unit call) is answered by this process, without Redis, until then, with the numbers Redis
   * would give, for at most `maxStaleMs` from the moment Redis decided. `false` turns it off;
   * `true` is `{}`. See the README, "Local deny table", for the staleness bound.
   * @default { maxEntries: 10000, maxStaleMs: 1000 }
   */
  localDeny?: boolean | LocalDenyOptions;
  /**
   * Subscribes a connection of its own to the invalidation channel (`<prefix>deny-invalidations`),
   * so that a reset (`delete`) or a refund that reopens a window in any process ends this process's
   * local refusal at once. Without it, such a change made elsewhere reaches this process within
   * `localDeny.maxStaleMs`. See {@link Subscribe} for the one-liners.
   */
  subscribe?: Subscribe;
  /**
   * After a decision that starts a lockout or a ban, `WAIT replicas timeoutMs` on the key's node
   * (routed by `sendCommand`'s `key`, see {@link SendCommand}), and the decision is returned once
   * it answered, within the store's `timeoutMs`. A `WAIT` that reached fewer replicas is logged
   * once per episode, never an error. Ordinary decisions never wait. `true` is `{}`. It is not
   * consensus: see the README, "Durability".
   * @default false
   */
  durability?: boolean | DurabilityOptions;
  /**
   * Timers for the `timeoutMs` race and the fallback store's sweep. By default the race uses a
   * ref'ed timer, alive only while a call is pending, and the sweep an `unref()`ed one.
   * @default the system timers
   */
  timers?: Timers;
}

/** The name config errors and logs give the store. */
export const WHERE = 'RedisStore';

/** The checks of {@link RedisStoreOptions}, one per option. */
export const spec = {
  sendCommand: functionOption,
  prefix: string,
  onError: oneOfOption<OnError>(['fallback', 'open', 'closed']),
  timeoutMs: integerOption(1, 2_147_483_647),
  probeIntervalMs: integerOption(1, 2_147_483_647),
  fallback: plainObject<MemoryStoreOptions>(),
  logger: methodsOption<Logger>('warn', 'error'),
  clock: methodsOption<Clock>('now'),
  timers: methodsOption<Timers>('setTimeout', 'clearTimeout'),
  localDeny: (value: unknown, fail: (expected: string) => never) =>
    typeof value === 'boolean'
      ? value
      : plainObject<LocalDenyOptions>()(value, () => fail('a boolean or an object')),
  subscribe: functionOption,
  durability: (value: unknown, fail: (expected: string) => never) =>
    typeof value === 'boolean'
      ? value
      : plainObject<DurabilityOptions>()(value, () => fail('false, true or an object')),
};

/** The checks of {@link DurabilityOptions}. */
export const durabilitySpec = {
  replicas: integerOption(1, 2_147_483_647),
  timeoutMs: integerOption(1, 2_147_483_647),
};

/** The checks of `LocalDenyOptions`. */
export const localDenySpec = {
  maxEntries: integerOption(1, 16_777_216),
  maxStaleMs: integerOption(1, 315_360_000_000),
};

/** Rewrites a nested option's config error so that it names `<parent>.<option>`. */
export function nested<T>(parent: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof PortcullisConfigError) {
      throw new PortcullisConfigError(
        error.code,
        `${parent}.${error.option}`,
        `${WHERE}: ${parent}: ${error.message}`,
      );
    }
    throw error;
  }
}
