import {
  type Clock,
  channels,
  type Decision,
  type FailureDecision,
  type FailureRule,
  functionOption,
  integerOption,
  type Logger,
  MemoryStore,
  type MemoryStoreOptions,
  methodsOption,
  oneOfOption,
  PortcullisConfigError,
  parseOptions,
  requiredOption,
  type Store,
  systemClock,
  systemTimers,
  type Timers,
  type WindowRule,
} from '@portcullis/core';
import { plainObject, string } from './options.js';
import { SCRIPT, SCRIPT_SHA } from './script.js';

/**
 * Sends one Redis command and resolves to its reply; a Redis error reply rejects. `args` are the
 * command and its arguments as strings (`['EVALSHA', sha, '1', key, …]`); `key` is the key the
 * command touches (for cluster clients that route by key), `undefined` for `PING` and `SCAN`.
 *
 * - ioredis / iovalkey: `(args) => redis.call(args[0], ...args.slice(1))`
 * - node-redis: `(args) => client.sendCommand(args)`
 * - node-redis cluster: `(args, key) => cluster.sendCommand(key, false, args)`
 */
export type SendCommand = (args: string[], key: string | undefined) => Promise<unknown>;

/**
 * What the store answers while Redis fails (an error reply, a lost connection or no answer within
 * `timeoutMs`):
 * - `fallback`: an in-process `MemoryStore` applies the same rules; decisions carry reason `'fallback'`.
 * - `open`: allow (reason `'store-error'`, `allowed: true`), counting nothing.
 * - `closed`: refuse (reason `'store-error'`, `allowed: false`); adapters answer 503, not 429.
 *
 * Under every policy a lockout this process has seen (from Redis or recorded by the fallback)
 * keeps refusing until it ends: a store error never unlocks anyone.
 */
export type OnError = 'fallback' | 'open' | 'closed';

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** Sends one command through your Redis client (see {@link SendCommand}). Required. */
  sendCommand: SendCommand;
  /** Prepended to every key. Use a hash tag (`{portcullis}:`) to keep every key on one Cluster shard. @default 'portcullis:' */
  prefix?: string;
  /** What to answer while Redis fails. @default 'fallback' */
  onError?: OnError;
  /** The longest a decision waits for Redis before `onError` decides. @default 1000 */
  timeoutMs?: number;
  /**
   * While Redis is failing, decisions go straight to the `onError` policy (no waiting) and one
   * `PING` every `probeIntervalMs` checks whether Redis is back.
   * @default 1000
   */
  probeIntervalMs?: number;
  /** Options of the in-process `MemoryStore` used as fallback and as the memory of lockouts seen. @default {} */
  fallback?: MemoryStoreOptions;
  /** Receives one error when an outage starts and one warning when Redis answers again. */
  logger?: Logger;
  /**
   * FOR DETERMINISTIC TESTS ONLY: when given, the script takes `now` from this clock (sent as an
   * argument) instead of the Redis server's `TIME`, so processes with skewed clocks would disagree.
   * It also times the outage probe and is the fallback store's clock. @default the Redis server clock
   */
  clock?: Clock;
  /** Timers for the `timeoutMs` race (unref'ed by default) and the fallback store's sweep. @default systemTimers */
  timers?: Timers;
}

const WHERE = 'RedisStore';

const spec = {
  sendCommand: functionOption,
  prefix: string,
  onError: oneOfOption<OnError>(['fallback', 'open', 'closed']),
  timeoutMs: integerOption(1, 2_147_483_647),
  probeIntervalMs: integerOption(1, 2_147_483_647),
  fallback: plainObject<MemoryStoreOptions>(),
  logger: methodsOption<Logger>('warn', 'error'),
  clock: methodsOption<Clock>('now'),
  timers: methodsOption<Timers>('setTimeout', 'clearTimeout'),
};

/** The error a decision gets when Redis did not answer within `timeoutMs`. */
class RedisTimeoutError extends Error {
  readonly code = 'ERR_PORTCULLIS_REDIS_TIMEOUT';
  constructor(ms: number) {
    super(`Redis did not answer within ${ms}ms`);
    this.name = 'RedisTimeoutError';
  }
}

/** Thrown (then handled as a store error) when a reply is not the script's five integers. */
class RedisReplyError extends Error {
  readonly code = 'ERR_PORTCULLIS_REDIS_REPLY';
  constructor(reply: unknown) {
    super(`unexpected reply from the Portcullis script: ${String(reply).slice(0, 100)}`);
    this.name = 'RedisReplyError';
  }
}

function isScriptReply(reply: unknown): reply is unknown[] {
  return Array.isArray(reply) && reply.length === 5;
}

function isNoScript(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.startsWith('NOSCRIPT');
}

function isScanReply(reply: unknown): reply is [unknown, unknown[]] {
  return Array.isArray(reply) && reply.length === 2 && Array.isArray(reply[1]);
}

const CONSUME = { 'fixed-window': 'cf', 'sliding-window': 'cs', 'token-bucket': 'ct' } as const;
const PEEK = { 'fixed-window': 'pf', 'sliding-window': 'ps', 'token-bucket': 'pt' } as const;

/** Escapes glob metacharacters so a prefix matches only itself in `SCAN … MATCH`. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * A {@link Store} in Redis: every decision is one atomic Lua script (`EVALSHA`, re-sent with
 * `EVAL` only on `NOSCRIPT`) that reads the Redis server clock, so any number of processes share
 * exact limits. Decisions equal `MemoryStore`'s to the unit. Client-agnostic: it only needs a
 * {@link SendCommand}. Never throws or rejects for a Redis failure: `onError` decides, no call waits
 * longer than `timeoutMs`, and a late reply is ignored.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * const redis = new Redis();
 * const store = new RedisStore({ sendCommand: (args) => redis.call(args[0]!, ...args.slice(1)) });
 * const limiter = createFailureLimiter({ store });
 * ```
 */
export class RedisStore implements Store {
  readonly #send: SendCommand;
  readonly #prefix: string;
  readonly #policy: OnError;
  readonly #timeoutMs: number;
  readonly #probeMs: number;
  readonly #local: MemoryStore;
  readonly #logger: Logger | undefined;
  /** The test-only clock whose time goes to the script; undefined = Redis `TIME`. */
  readonly #scriptClock: Clock | undefined;
  /** Times outages and probes. */
  readonly #clock: Clock;
  readonly #timers: Timers;
  #down = false;
  #downSince = 0;
  #nextProbeAt = 0;
  #probing = false;
  #degraded = 0;
  /** The error of an outage whose first degraded decision is not yet published. */
  #unannounced: { error: unknown } | undefined;
  #closed = false;

  /**
   * @param options see {@link RedisStoreOptions}
   * @throws {PortcullisConfigError} for a missing `sendCommand`, a wrong or unknown option
   */
  constructor(options: RedisStoreOptions) {
    const o = parseOptions(options, spec, WHERE);
    this.#send = requiredOption(o.sendCommand, 'sendCommand', 'a function', WHERE) as SendCommand;
    this.#prefix = o.prefix ?? 'portcullis:';
    this.#policy = o.onError ?? 'fallback';
    this.#timeoutMs = o.timeoutMs ?? 1000;
    this.#probeMs = o.probeIntervalMs ?? 1000;
    this.#logger = o.logger;
    this.#scriptClock = o.clock;
    this.#clock = o.clock ?? systemClock;
    this.#timers = o.timers ?? systemTimers;
    try {
      this.#local = new MemoryStore({
        ...(o.clock !== undefined && { clock: o.clock }),
        ...(o.timers !== undefined && { timers: o.timers }),
        ...o.fallback,
      });
    } catch (error) {
      if (error instanceof PortcullisConfigError) {
        throw new PortcullisConfigError(
          error.code,
          `fallback.${error.option}`,
          `${WHERE}: fallback: ${error.message}`,
        );
      }
      throw error;
    }
  }

  /** The key prefix in use. */
  get prefix(): string {
    return this.#prefix;
  }

  /** The policy applied while Redis fails. */
  get onError(): OnError {
    return this.#policy;
  }

  /** Whether the store currently considers Redis unavailable (decisions go to `onError`). */
  get degraded(): boolean {
    return this.#down;
  }

  /** Spends `cost` units of `key` under `rule` in one script call; a refused call spends nothing. */
  consume(key: string, rule: WindowRule, cost: number): Promise<Decision> {
    if (!this.#available())
      return Promise.resolve(this.#windowFallback(key, rule, cost, undefined));
    const args = this.#args(
      key,
      CONSUME[rule.algorithm],
      String(rule.limit),
      String(rule.windowMs),
      String(cost),
    );
    return this.#script(args).then(
      (reply) => this.#decision(reply, rule.limit, key, 'limited'),
      (error: unknown) => this.#windowFallback(key, rule, cost, error),
    );
  }

  /** What `consume(key, rule, 1)` would answer, changing nothing. */
  peek(key: string, rule: WindowRule): Promise<Decision> {
    if (!this.#available())
      return Promise.resolve(this.#windowFallback(key, rule, undefined, undefined));
    const args = this.#args(
      key,
      PEEK[rule.algorithm],
      String(rule.limit),
      String(rule.windowMs),
      '1',
    );
    return this.#script(args).then(
      (reply) => this.#decision(reply, rule.limit, key, 'limited'),
      (error: unknown) => this.#windowFallback(key, rule, undefined, error),
    );
  }

  /** The failure state of `key` (locked or not), counting nothing. */
  checkFailures(key: string, rule: FailureRule): Promise<Decision> {
    return this.#failure(key, rule, 'k');
  }

  /** Counts one failure; the decision after counting (`lockoutStarted` on the one that locks). */
  recordFailure(key: string, rule: FailureRule): Promise<FailureDecision> {
    return this.#failure(key, rule, 'r');
  }

  /**
   * Forgets `key` (one `DEL`, and the fallback's copy). While Redis fails only the fallback's copy
   * goes; the Redis key keeps its state until its TTL.
   */
  delete(key: string): Promise<void> {
    this.#local.delete(key);
    if (!this.#available()) return Promise.resolve();
    const redisKey = this.#prefix + key;
    return this.#deadline(() => this.#call(['DEL', redisKey], redisKey)).then(
      () => this.#up(),
      (error: unknown) => this.#fail(error),
    );
  }

  /**
   * Counts the keys under the prefix with `SCAN` (approximate: keys expire and appear while it
   * runs; O(keys in the database), so not for a hot path; on Cluster it sees one node). While
   * Redis fails it reports the fallback store's size.
   */
  async size(): Promise<number> {
    if (!this.#available()) return this.#local.size();
    const match = `${globEscape(this.#prefix)}*`;
    let cursor = '0';
    let count = 0;
    try {
      do {
        const reply = await this.#deadline(
          () => this.#call(['SCAN', cursor, 'MATCH', match, 'COUNT', '1000'], undefined),
          isScanReply,
        );
        cursor = String(reply[0]);
        count += reply[1].length;
      } while (cursor !== '0');
      this.#up();
      return count;
    } catch (error) {
      this.#fail(error);
      return this.#local.size();
    }
  }

  /** Stops the fallback store's sweep timer. The Redis client is yours: close it yourself. */
  close(): void {
    this.#closed = true;
    this.#local.close();
  }

  #failure(key: string, rule: FailureRule, op: 'k' | 'r'): Promise<FailureDecision> {
    if (!this.#available()) return Promise.resolve(this.#failureFallback(key, rule, op, undefined));
    const args = this.#args(
      key,
      op,
      String(rule.maxAttempts),
      String(rule.windowMs),
      String(rule.lockoutMs),
    );
    return this.#script(args).then(
      (reply) => {
        const d = this.#decision(reply, rule.maxAttempts, key, 'locked');
        // Remember the lockout here too, so that it keeps refusing if Redis fails before it ends.
        if (d.reason === 'locked') {
          this.#local.recordFailure(key, {
            maxAttempts: 1,
            windowMs: rule.windowMs,
            lockoutMs: d.retryAfterMs,
          });
        }
        return d;
      },
      (error: unknown) => this.#failureFallback(key, rule, op, error),
    );
  }

  /** `EVALSHA sha 1 <prefixed key> <op> <three numbers> [now]` (see script.ts for the layout). */
  #args(key: string, op: string, a: string, b: string, c: string): string[] {
    const args = ['EVALSHA', SCRIPT_SHA, '1', this.#prefix + key, op, a, b, c];
    if (this.#scriptClock !== undefined) args.push(String(this.#scriptClock.now()));
    return args;
  }

  /** Runs the script: `EVALSHA`, then `EVAL` once if (and only if) Redis answers `NOSCRIPT`. */
  #script(args: string[]): Promise<unknown[]> {
    const redisKey = args[3];
    return this.#deadline(
      (expired) =>
        this.#call(args, redisKey).catch((error: unknown) => {
          if (!isNoScript(error) || expired()) throw error;
          const again = args.slice();
          again[0] = 'EVAL';
          again[1] = SCRIPT;
          return this.#call(again, redisKey);
        }),
      isScriptReply,
    );
  }

  /** Calls `sendCommand`, turning a synchronous throw into a rejection. */
  #call(args: string[], key: string | undefined): Promise<unknown> {
    try {
      return Promise.resolve(this.#send(args, key));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Races `run` against `timeoutMs`; whatever settles second is ignored (and never unhandled). */
  #deadline<T>(
    run: (expired: () => boolean) => Promise<unknown>,
    valid: (value: unknown) => value is T = (value: unknown): value is T => true,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = this.#timers.setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new RedisTimeoutError(this.#timeoutMs));
      }, this.#timeoutMs);
      run(() => settled).then(
        (value) => {
          if (settled) return;
          settled = true;
          this.#timers.clearTimeout(timer);
          if (valid(value)) resolve(value);
          else reject(new RedisReplyError(value));
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          this.#timers.clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  #decision(
    reply: unknown[],
    limit: number,
    key: string,
    refused: 'limited' | 'locked',
  ): FailureDecision {
    if (this.#down) this.#up();
    const allowed = Number(reply[0]) === 1;
    const d: Decision = {
      allowed,
      reason: allowed ? 'allowed' : refused,
      limit,
      remaining: Number(reply[1]),
      retryAfterMs: Number(reply[2]),
      resetMs: Number(reply[3]),
      key,
    };
    return Number(reply[4]) === 1 ? { ...d, lockoutStarted: true } : d;
  }

  /** `cost` undefined: a peek. */
  #windowFallback(
    key: string,
    rule: WindowRule,
    cost: number | undefined,
    error: unknown,
  ): Decision {
    if (error !== undefined) this.#fail(error);
    let d: Decision;
    if (this.#policy === 'fallback') {
      const local =
        cost === undefined ? this.#local.peek(key, rule) : this.#local.consume(key, rule, cost);
      d = local.reason === 'overflow' ? local : { ...local, reason: 'fallback' };
    } else {
      d = this.#storeError(key, rule.limit);
    }
    return this.#announce(d);
  }

  #failureFallback(key: string, rule: FailureRule, op: 'k' | 'r', error: unknown): FailureDecision {
    if (error !== undefined) this.#fail(error);
    let d: FailureDecision;
    if (this.#policy === 'fallback') {
      const local =
        op === 'r' ? this.#local.recordFailure(key, rule) : this.#local.checkFailures(key, rule);
      d = local.reason === 'overflow' ? local : { ...local, reason: 'fallback' };
    } else {
      // Nothing is counted, but a lockout this process knows keeps refusing.
      const known = this.#local.checkFailures(key, rule);
      d =
        known.reason === 'locked'
          ? { ...known, reason: 'fallback' }
          : this.#storeError(key, rule.maxAttempts);
    }
    return this.#announce(d);
  }

  #storeError(key: string, limit: number): Decision {
    return this.#policy === 'open'
      ? {
          allowed: true,
          reason: 'store-error',
          limit,
          remaining: limit,
          retryAfterMs: 0,
          resetMs: 0,
          key,
        }
      : {
          allowed: false,
          reason: 'store-error',
          limit,
          remaining: 0,
          retryAfterMs: this.#probeMs,
          resetMs: this.#probeMs,
          key,
        };
  }

  /** Publishes the first degraded decision of an outage on `portcullis:store-error`. */
  #announce<D extends Decision>(d: D): D {
    this.#degraded++;
    const pending = this.#unannounced;
    if (pending !== undefined) {
      this.#unannounced = undefined;
      if (channels.storeError.hasSubscribers) {
        channels.storeError.publish({ limiter: WHERE, decision: d, error: pending.error });
      }
    }
    return d;
  }

  /** Whether to ask Redis now; while it is down, starts a background probe when one is due. */
  #available(): boolean {
    if (!this.#down) return true;
    if (!this.#probing && !this.#closed) {
      const now = this.#clock.now();
      if (now >= this.#nextProbeAt) {
        this.#probing = true;
        this.#nextProbeAt = now + this.#probeMs;
        this.#deadline(() => this.#call(['PING'], undefined)).then(
          () => {
            this.#probing = false;
            this.#up();
          },
          () => {
            this.#probing = false;
          },
        );
      }
    }
    return false;
  }

  /** Records a failure: the first one of an outage logs once and arms the probe. */
  #fail(error: unknown): void {
    if (this.#down) return;
    const now = this.#clock.now();
    this.#down = true;
    this.#downSince = now;
    this.#nextProbeAt = now + this.#probeMs;
    this.#degraded = 0;
    this.#unannounced = { error };
    const message = error instanceof Error ? error.message : String(error);
    this.#logger?.error(
      {
        code: 'PORTCULLIS_STORE_ERROR',
        store: WHERE,
        prefix: this.#prefix,
        onError: this.#policy,
        err: error,
      },
      `${WHERE}: Redis failed (${message}); onError '${this.#policy}' decides until Redis answers again`,
    );
  }

  #up(): void {
    if (!this.#down) return;
    this.#down = false;
    this.#unannounced = undefined;
    this.#logger?.warn(
      {
        code: 'PORTCULLIS_STORE_RECOVERED',
        store: WHERE,
        prefix: this.#prefix,
        outageMs: this.#clock.now() - this.#downSince,
        degradedDecisions: this.#degraded,
      },
      `${WHERE}: Redis answers again after ${this.#clock.now() - this.#downSince}ms; ${this.#degraded} decisions were made by onError '${this.#policy}'`,
    );
  }
}
