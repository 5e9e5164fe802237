import { createHash } from 'node:crypto';
import {
  type Clock,
  channels,
  type Decision,
  type FailureDecision,
  type FailureRule,
  type Logger,
  type MaybePromise,
  MemoryStore,
  PortcullisConfigError,
  type Store,
  type StoreAnswer,
  type StoreCall,
  type StoreLockout,
  systemClock,
  type TimerHandle,
  type Timers,
  type TrustRule,
  type WindowRule,
} from '@portcullis/core';
import {
  byEnd,
  LinkedDecision,
  parseOptions,
  requiredOption,
  safeLogger,
  timeStoreCall,
} from '@portcullis/core/adapter';
import { LocalDeny } from './local-deny.js';
import {
  durabilitySpec,
  localDenySpec,
  nested,
  type OnError,
  type RedisStoreOptions,
  type SendCommand,
  type Subscribe,
  spec,
  type Unsubscribe,
  WHERE,
} from './options.js';
import {
  failureReplyValid,
  isDelReply,
  isTrustedReply,
  isMembersReply,
  isCrossSlot,
  isNoScript,
  isPong,
  isRangeReply,
  isRefundReply,
  isRestampReply,
  isScanReply,
  isTimeReply,
  isWaitReply,
  RedisReplyError,
  RedisTimeoutError,
  type ScriptReply,
  windowReplyValid,
} from './replies.js';
import { DurableLockouts } from './durability.js';
import { Outage } from './outage.js';
import { eachScanPage, globEscape, type ScanPage } from './scan.js';
import {
  indexEntries,
  indexKeyOf,
  indexMembers,
  LISTING_BATCH,
  REGISTRY_TTL_MS,
  registeredSlots,
  registryKey,
  slotIndexKey,
} from './lockout-index.js';
import { BATCH_SCRIPT, batchArgs } from './batch-script.js';
import { ScriptCall } from './script-call.js';
import { SCRIPT, SCRIPT_SHA } from './script.js';
import { TRUST_SCRIPT, TRUST_SCRIPT_SHA, trustKeys } from './trust-script.js';
import { type SeenLockout, SeenLockouts } from './seen-lockouts.js';
import { keySlot } from './slots.js';

/**
 * Marks an invalidation published by a refund that reopened a window (the key follows), apart from
 * a reset's (the key alone): only a reset cancels the refunds of spends made before it. A process
 * of an older version reads the marked message as a key that does not exist, and its local refusal
 * ends within `localDeny.maxStaleMs`, as when a message is lost.
 */
const REOPENED = '\u0001reopened:';
/** Marks a reset of a key that itself starts like a marked message (any other goes as it is). */
const RESET = '\u0001reset:';

/**
 * The default timers of the per-call deadline: ref'ed, so a pending call keeps the process alive
 * until `onError` answers (the timer exists only while a call is pending).
 */
const callTimers: Timers = Object.freeze({
  setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clearTimeout: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/** A call waiting for its reply under the shared deadline timer (see {@link Deadlines}). */
class Pending {
  /** When it times out, in `performance.now()` time. */
  readonly at: number;
  readonly expire: () => void;
  prev: Pending | undefined = undefined;
  next: Pending | undefined = undefined;
  constructor(at: number, expire: () => void) {
    this.at = at;
    this.expire = expire;
  }
}

/**
 * The deadlines of the calls in flight under the system timers, all `ms` long: one list in the
 * order they were made (so in the order they end) and one timer, armed for the earliest. A timer
 * of its own per call (setTimeout, then clearTimeout on the reply) cost about 0.27 µs of an
 * allowed decision's ~11 µs (bench/redis/insn-fake.mjs). Each call still times out when its own
 * `ms` has passed on the monotonic clock (a timer that fires before that is armed again for the
 * rest), never later than its own timer would have. The timer is ref'ed exactly while a call is
 * pending, as a per-call timer was: a pending call keeps the process alive until `onError`
 * answers, an idle store does not.
 */
class Deadlines {
  readonly #ms: number;
  #first: Pending | undefined;
  #last: Pending | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #refed = false;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** Registers a call made now: `expire` runs once its `ms` have passed, unless removed first. */
  add(expire: () => void): Pending {
    const p = new Pending(performance.now() + this.#ms, expire);
    const last = this.#last;
    if (last === undefined) this.#first = p;
    else {
      last.next = p;
      p.prev = last;
    }
    this.#last = p;
    if (this.#timer === undefined) {
      this.#timer = setTimeout(this.#fire, this.#ms);
      this.#refed = true;
    } else if (!this.#refed) {
      this.#timer.ref();
      this.#refed = true;
    }
    return p;
  }

  /** The call settled (or expired): its deadline goes. */
  remove(p: Pending): void {
    const { prev, next } = p;
    if (prev === undefined) this.#first = next;
    else prev.next = next;
    if (next === undefined) this.#last = prev;
    else next.prev = prev;
    p.prev = undefined;
    p.next = undefined;
    if (this.#first === undefined && this.#refed) {
      // Nothing pending: the armed timer stays (the next call reuses it) but keeps no process up.
      (this.#timer as ReturnType<typeof setTimeout>).unref();
      this.#refed = false;
    }
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#refed = false;
    const now = performance.now();
    for (let p = this.#first; p !== undefined && p.at <= now; p = this.#first) {
      this.remove(p);
      p.expire();
    }
    const first = this.#first;
    if (first !== undefined) {
      this.#timer = setTimeout(this.#fire, Math.max(1, Math.ceil(first.at - now)));
      this.#refed = true;
    }
  };
}

const CONSUME = { 'fixed-window': 'cf', 'sliding-window': 'cs', 'token-bucket': 'ct' } as const;
const PEEK = { 'fixed-window': 'pf', 'sliding-window': 'ps', 'token-bucket': 'pt' } as const;
const REFUND = { 'fixed-window': 'gf', 'sliding-window': 'gs', 'token-bucket': 'gt' } as const;
const RESTAMP = { 'fixed-window': 'xf', 'sliding-window': 'xs', 'token-bucket': 'xt' } as const;

/*
 * The script's time of an allowed consume's spend rides on the decision itself, for its refund: a
 * LinkedDecision (a private field, invisible to spreads, JSON and deep equality). A WeakMap entry
 * per allowed decision cost about 1 µs of CPU and garbage collection, a non-enumerable property
 * (Object.defineProperty) about 0.27 µs (bench/NOTES.md); the class about 15 ns.
 */

/**
 * A failure rule's lockout as the script reads it (ARGV[4]): `lockoutMs`, or
 * `lockoutMs,factor,maxLockoutMs` for a rule that escalates (a plain rule costs nothing more).
 */
function lockoutArg(rule: FailureRule): string {
  const e = rule.escalate;
  return e === undefined
    ? String(rule.lockoutMs)
    : `${rule.lockoutMs},${e.factor},${e.maxLockoutMs}`;
}

/** A lone surrogate: a string that UTF-8 (what Redis receives) cannot carry as it is. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * A distinct log's member as sent to the script, one-to-one with the caller's: Redis compares
 * UTF-8 bytes, where every lone surrogate becomes U+FFFD, so such a member (and one that starts
 * like an escaped one, U+0001 or U+0002) goes as U+0001 and the hex of its UTF-16 code units. A
 * member past the 256 characters the contract allows goes as U+0002 and its SHA-256, so it stays
 * distinct without growing the log. The empty member stays empty: it is what a plain recorded
 * failure counts as in a distinct log, in memory as in Redis.
 */
function memberArg(member: string): string {
  if (member.length > 256)
    return `\u0002${createHash('sha256').update(member, 'utf16le').digest('hex')}`;
  const first = member.charCodeAt(0);
  if (first !== 1 && first !== 2 && !LONE_SURROGATE.test(member)) return member;
  let hex = '\u0001';
  for (let i = 0; i < member.length; i++) hex += member.charCodeAt(i).toString(16).padStart(4, '0');
  return hex;
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
  /** Times outages, probes and the lockouts seen. */
  readonly #clock: Clock;
  /** Times each call's deadline. */
  readonly #timers: Timers;
  /** With the system timers: the shared deadline of the calls of `timeoutMs` (else undefined). */
  readonly #deadlines: Deadlines | undefined;
  /** Whether Redis refused a batch whose keys span slots (a Cluster): batches then go by slot. */
  #cluster = false;
  /**
   * Lockouts this process has seen, from Redis replies or started by the fallback, keyed like the
   * store: each refuses until it ends, whatever Redis says later. At most `fallback.maxEntries`.
   */
  readonly #seen: SeenLockouts;
  /** Whether Redis is down, the probe that asks, and the log lines of an outage. */
  readonly #outage: Outage;
  #closed = false;
  /** Refusals answered locally (undefined: `localDeny: false`). */
  readonly #deny: LocalDeny | undefined;
  /**
   * Bumped by every reset, refund and invalidation this process sees: a reply to a call sent
   * before one of them may predate it, so it teaches the deny table nothing.
   */
  #epoch = 0;
  /** See {@link RedisStore.deletions}. */
  #deletions = 0;
  /** While a re-stamp walk runs (bounded): calls wait for it (see {@link RedisStore.restamp}). */
  #barrier: Promise<void> | undefined;
  /** Hash slots this process has named in the lockout-slot registry, and when (see #index). */
  readonly #registered = new Map<number, number>();
  /** Where resets and reopening refunds are published. */
  readonly #channel: string;
  #unsubscribe: Unsubscribe | undefined;
  /**
   * Whether resets made elsewhere reach this process (`subscribe` given and not failed): only then
   * are lockouts seen in Redis written back, since a write-back must never undo such a reset.
   */
  #subscribed = false;
  /** When each recent write-back was sent (see {@link RedisStore.#resetAfterWriteBack}). */
  readonly #writtenBack = new Map<string, number>();
  /** The timers given as an option, else undefined (the system's, each timer unref()ed). */
  readonly #ownTimers: Timers | undefined;
  /** While write-backs wait for Redis to come back: the timer that probes for it. */
  #retrying: TimerHandle | undefined;
  /** `durability` (undefined: off): the WAIT after a lockout starts. */
  readonly #durability: DurableLockouts | undefined;

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
    // The user's logger is called on paths that must always answer (an outage, a failed
    // subscribe): a logger that throws must not turn a decision into a rejection or a crash.
    this.#logger = safeLogger(o.logger);
    this.#scriptClock = o.clock;
    this.#clock = o.clock ?? systemClock;
    this.#timers = o.timers ?? callTimers;
    this.#ownTimers = o.timers;
    // Injected timers (fake ones in tests) see one timer per call, exactly as they always did.
    this.#deadlines = o.timers === undefined ? new Deadlines(this.#timeoutMs) : undefined;
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
    this.#seen = new SeenLockouts(this.#local.maxEntries);
    this.#outage = new Outage({
      policy: this.#policy,
      probeMs: this.#probeMs,
      prefix: this.#prefix,
      clock: this.#clock,
      logger: this.#logger,
      probe: () => this.#deadline(() => this.#call(['PING'], undefined), isPong),
      closed: () => this.#closed,
      recovered: () => this.#writeBack(),
    });
    const deny = o.localDeny ?? true;
    if (deny !== false) {
      const d = nested('localDeny', () =>
        parseOptions(deny === true ? {} : deny, localDenySpec, `${WHERE}.localDeny`),
      );
      this.#deny = new LocalDeny(d.maxEntries ?? 10_000, d.maxStaleMs ?? 1000);
    }
    const durability = o.durability ?? false;
    if (durability !== false) {
      const d = nested('durability', () =>
        parseOptions(durability === true ? {} : durability, durabilitySpec, `${WHERE}.durability`),
      );
      if (d.timeoutMs !== undefined && d.timeoutMs > this.#timeoutMs) {
        throw new PortcullisConfigError(
          'ERR_PORTCULLIS_TIMEOUT_MS',
          'durability.timeoutMs',
          `${WHERE}: durability: option "timeoutMs" must be at most the store's timeoutMs (${this.#timeoutMs}), got ${d.timeoutMs}`,
        );
      }
      this.#durability = new DurableLockouts({
        replicas: d.replicas ?? 1,
        timeoutMs: Math.min(d.timeoutMs ?? 50, this.#timeoutMs),
        storeTimeoutMs: this.#timeoutMs,
        probeMs: this.#probeMs,
        prefix: this.#prefix,
        clock: this.#clock,
        logger: this.#logger,
        wait: (redisKey, replicas, ms, deadlineMs) =>
          this.#deadline(
            () => this.#call(['WAIT', String(replicas), String(ms)], redisKey),
            isWaitReply,
            deadlineMs,
          ),
      });
    }
    this.#channel = `${this.#prefix}deny-invalidations`;
    if (o.subscribe !== undefined) this.#subscribe(o.subscribe as Subscribe);
  }

  /** Calls `subscribe` once; a failure to subscribe is logged (entries stay bounded by maxStaleMs). */
  #subscribe(subscribe: Subscribe): void {
    const onMessage = (message: unknown) => {
      const text = String(message);
      if (text.startsWith(REOPENED)) {
        this.#invalidate(text.slice(REOPENED.length));
      } else {
        // A reset elsewhere: refunds of spends made before it give nothing back (see deletions).
        this.#deletions++;
        const key = text.startsWith(RESET) ? text.slice(RESET.length) : text;
        this.#invalidate(key);
        this.#resetAfterWriteBack(key);
      }
    };
    this.#subscribed = true;
    const failed = (error: unknown) => {
      this.#subscribed = false;
      const text = error instanceof Error ? error.message : String(error);
      this.#logger?.warn(
        { code: 'PORTCULLIS_SUBSCRIBE_FAILED', store: WHERE, channel: this.#channel, err: error },
        `${WHERE}: subscribe to ${this.#channel} failed (${text}); resets made in other processes reach this one within localDeny.maxStaleMs`,
      );
    };
    const keep = (value: unknown) => {
      if (typeof value !== 'function') return;
      if (this.#closed) this.#stopSubscription(value as Unsubscribe);
      else this.#unsubscribe = value as Unsubscribe;
    };
    try {
      const result = subscribe(this.#channel, onMessage);
      if (result !== null && typeof (result as Promise<unknown>)?.then === 'function')
        (result as Promise<unknown>).then(keep, failed);
      else keep(result);
    } catch (error) {
      failed(error);
    }
  }

  #stopSubscription(stop: Unsubscribe): void {
    try {
      const done = stop();
      if (done !== null && typeof (done as Promise<unknown>)?.then === 'function')
        (done as Promise<unknown>).then(undefined, () => {});
    } catch {
      // The subscriber connection is going away anyway.
    }
  }

  /**
   * A reset or a reopening refund made anywhere: this process forgets what it held for `key` (its
   * local refusal, the lockout it saw, the fallback's copy) and what is in flight teaches nothing.
   */
  #invalidate(key: string): void {
    this.#epoch++;
    this.#deny?.delete(key);
    if (this.#seen.size > 0) this.#seen.delete(key);
    this.#local.delete(key);
  }

  /**
   * A reset of `key` made elsewhere reached this process shortly after it wrote `key`'s lockout back
   * (the write-back may have landed after the reset): the reset is made again here, so that it
   * wins. Only the key and its index entry go; every other process already heard of the reset.
   */
  #resetAfterWriteBack(key: string): void {
    const at = this.#writtenBack.get(key);
    if (at === undefined) return;
    this.#writtenBack.delete(key);
    if (this.#clock.now() - at > 2 * this.#timeoutMs || this.#closed) return;
    const redisKey = this.#prefix + key;
    const index = indexKeyOf(this.#prefix, redisKey);
    this.#deadline(
      () =>
        Promise.all([
          this.#call(['DEL', redisKey], redisKey),
          this.#call(['ZREM', index, `0${redisKey}`, `1${redisKey}`], index),
        ]),
      (r): r is unknown[] => Array.isArray(r),
    ).then(
      () => undefined,
      (error: unknown) => this.#outage.fail(error),
    );
  }

  /**
   * Tells every process (through the subscribers) to forget its local refusal of `key`: `message`
   * is the key itself for a reset, or the key marked {@link REOPENED} for a refund that reopened it.
   */
  #publish(key: string, message = key): Promise<unknown> {
    const redisKey = this.#prefix + key;
    // Classic PUBLISH reaches every node of a Cluster; the key lets a routing client pick its node.
    return this.#call(['PUBLISH', this.#channel, message], redisKey);
  }

  /**
   * Resets made through this store or heard of through `subscribe` since it was made: outcome
   * counting gives nothing back across one (see `Store.deletions`).
   */
  get deletions(): number {
    return this.#deletions;
  }

  /** The key prefix in use. */
  get prefix(): string {
    return this.#prefix;
  }

  /** The policy applied while Redis fails. */
  get onError(): OnError {
    return this.#policy;
  }

  /**
   * The local deny table's settings and counts (`entries` held now, `answered` calls answered
   * without Redis since the store was made), or `false` when `localDeny` is off.
   */
  get localDeny():
    | false
    | { maxEntries: number; maxStaleMs: number; entries: number; answered: number } {
    const d = this.#deny;
    if (d === undefined) return false;
    return {
      maxEntries: d.maxEntries,
      maxStaleMs: d.maxStaleMs,
      entries: d.size,
      answered: d.answered,
    };
  }

  /** The resolved `durability` (`{ replicas, timeoutMs }`), or `false` when it is off. */
  get durability(): false | { replicas: number; timeoutMs: number } {
    const d = this.#durability;
    return d === undefined ? false : { replicas: d.replicas, timeoutMs: d.timeoutMs };
  }

  /** Whether the store currently considers Redis unavailable (decisions go to `onError`). */
  get degraded(): boolean {
    return this.#outage.down;
  }

  /** Spends `cost` units of `key` under `rule` in one script call; a refused call spends nothing. */
  consume(key: string, rule: WindowRule, cost: number): Promise<Decision> {
    if (!this.#outage.available())
      return Promise.resolve(this.#windowFallback(key, rule, cost, undefined));
    const now = this.#clock.now();
    const denied = this.#deny?.window(key, rule, cost, now);
    if (denied !== undefined) return Promise.resolve(denied);
    const epoch = this.#epoch;
    const args = this.#args(
      key,
      CONSUME[rule.algorithm],
      String(rule.limit),
      String(rule.windowMs),
      String(cost),
    );
    return this.#scriptThen(
      args,
      (r) => windowReplyValid(r, rule, false),
      (reply) => {
        const d = this.#windowDecision(reply, rule, key, cost, now, epoch);
        const at = reply[5];
        return at === undefined ? d : new LinkedDecision(d, d.key, at);
      },
      (error: unknown) => this.#windowFallback(key, rule, cost, error),
    );
  }

  /** What `consume(key, rule, 1)` would answer, changing nothing. */
  peek(key: string, rule: WindowRule): Promise<Decision> {
    if (!this.#outage.available())
      return Promise.resolve(this.#windowFallback(key, rule, undefined, undefined));
    const now = this.#clock.now();
    const denied = this.#deny?.window(key, rule, undefined, now);
    if (denied !== undefined) return Promise.resolve(denied);
    const epoch = this.#epoch;
    const args = this.#args(
      key,
      PEEK[rule.algorithm],
      String(rule.limit),
      String(rule.windowMs),
      '1',
    );
    return this.#script(args, (r) => windowReplyValid(r, rule, true)).then(
      (reply) => this.#windowDecision(reply, rule, key, undefined, now, epoch),
      (error: unknown) => this.#windowFallback(key, rule, undefined, error),
    );
  }

  /**
   * Gives back `cost` units of `key` spent `agoMs` ago, to the window they were spent in (never
   * below zero; an absent key, another algorithm's state and a lockout are left alone), in one
   * script call on the Redis clock, as `MemoryStore.refund` does. Never rejects: a Redis failure
   * is a store error like any other (logged once per outage, then outage mode); under `fallback`
   * the fallback store gets the refund, under `open` and `closed` nothing is given back. A
   * refund is no decision: it is not published on `portcullis:store-error` and does not count
   * among an outage's degraded decisions. It changes no lockout, seen or not.
   */
  refund(
    key: string,
    rule: WindowRule,
    cost: number,
    agoMs: number,
    spent?: Decision,
  ): Promise<void> {
    // It may reopen the window: this process stops answering it locally at once.
    this.#epoch++;
    this.#deny?.delete(key);
    if (!this.#outage.available()) {
      this.#refundFallback(key, rule, cost, agoMs, undefined);
      return Promise.resolve();
    }
    // When this store's consume made `spent`, the script's own time of the spend is exact, where
    // agoMs (the caller's clock, from when the reply arrived) is late by the reply's trip.
    const link = spent === undefined ? undefined : LinkedDecision.linkOf(spent);
    const at = typeof link === 'number' ? link : undefined;
    const args = this.#args(
      key,
      REFUND[rule.algorithm],
      String(rule.limit),
      String(rule.windowMs),
      String(cost),
      at === undefined ? String(agoMs) : `@${at}`,
    );
    return this.#script(args, isRefundReply).then(
      (given) => {
        if (this.#outage.down) this.#outage.up();
        // The window refused a unit call before: other processes may hold that refusal.
        if (given !== 2) return undefined;
        return this.#publish(key, REOPENED + key).then(
          () => undefined,
          (error: unknown) => this.#outage.fail(error),
        );
      },
      (error: unknown) => this.#refundFallback(key, rule, cost, agoMs, error),
    );
  }

  /**
   * Locks `key` out by hand for `ms` (see `Store.ban`), in one script call that also lists it in
   * the lockout index. While Redis fails the fallback store bans it, and the ban is written back
   * (as a lockout of the time it has left) when Redis answers again.
   */
  ban(key: string, rule: FailureRule, ms: number): Promise<FailureDecision> {
    if (!this.#outage.available())
      return Promise.resolve(this.#banFallback(key, rule, ms, undefined));
    const from = this.#clock.now();
    const epoch = this.#epoch;
    const args = this.#args(
      key,
      'b',
      String(rule.maxAttempts),
      String(rule.windowMs),
      lockoutArg(rule),
      String(ms),
    );
    return this.#script(args, (r) => failureReplyValid(r, rule, 'b')).then(
      (reply) => {
        const d = this.#failureDecision(reply, rule, key, 'k', epoch === this.#epoch);
        if (epoch === this.#epoch) this.#deny?.learnFailure(key, rule, d, from, true);
        if (reply[0] !== 0) return d;
        // An operator's ban resolves once it is listed too (a CLI exits right after it), and with
        // `durability` once a replica has it.
        const listed = this.#index(key, reply[2], reply[4] === 3);
        const durable = this.#durability?.after(this.#prefix + key, from);
        // A ban now in force outlasts what other processes may answer locally (a shorter lockout
        // in their deny tables): they forget it at once and ask Redis, as after a reopening
        // refund (the same marked message: it invalidates, and cancels no refund).
        const published =
          reply[4] === 3
            ? this.#publish(key, REOPENED + key).then(
                () => undefined,
                () => undefined,
              )
            : undefined;
        return Promise.all([listed, durable, published]).then(() => d);
      },
      (error: unknown) => this.#banFallback(key, rule, ms, error),
    );
  }

  #banFallback(key: string, rule: FailureRule, ms: number, error: unknown): FailureDecision {
    if (error !== undefined) this.#outage.fail(error);
    const d = this.#local.ban(key, rule, ms);
    if (d.reason === 'locked') {
      const now = this.#clock.now();
      this.#seen.remember(key, now + d.retryAfterMs, rule, true, now);
    }
    return this.#outage.announce(d.reason === 'overflow' ? d : { ...d, reason: 'fallback' });
  }

  /**
   * The lockouts in force under `prefix` (see `Store.lockouts`), found in the lockout index: one
   * sorted set per Redis Cluster hash slot (a script may touch one slot only), and a registry of
   * the slots that have held one, so a listing reads the registry and those slots' sets (each
   * entry is a key and its end), never a `SCAN` of the keys. On one Redis the same sets are used,
   * so a Cluster and a single instance list alike. Each entry found is then read
   * as `checkFailures` reads it (one script call each, soonest end first until `limit` are in
   * force), so an entry the index still holds for a lockout that is over, reset or clamped after
   * a clock step is never listed as it was. While Redis fails it lists what the fallback holds.
   */
  async lockouts(prefix: string, limit: number, rule: FailureRule): Promise<StoreLockout[]> {
    if (!this.#outage.available()) return this.#local.lockouts(prefix, limit, rule);
    const wanted = this.#prefix + prefix;
    try {
      const now =
        this.#scriptClock !== undefined
          ? this.#scriptClock.now()
          : await this.#deadline(() => this.#call(['TIME'], undefined), isTimeReply).then(
              ([seconds, micros]) =>
                Number(String(seconds)) * 1000 + Math.floor(Number(String(micros)) / 1000),
            );
      const candidates: { key: string; until: number }[] = [];
      const read = async (slot: number) => {
        const index = slotIndexKey(this.#prefix, slot);
        const reply = await this.#deadline(
          () =>
            this.#call(
              [
                'ZRANGEBYSCORE',
                index,
                `(${now}`,
                '+inf',
                'WITHSCORES',
                'LIMIT',
                '0',
                String(limit),
              ],
              index,
            ),
          isRangeReply,
        );
        candidates.push(...indexEntries(reply, wanted, this.#prefix));
      };
      const registry = registryKey(this.#prefix);
      const members = await this.#deadline(
        () => this.#call(['SMEMBERS', registry], registry),
        isMembersReply,
      );
      const slots = registeredSlots(members);
      for (let at = 0; at < slots.length; at += LISTING_BATCH)
        await Promise.all(slots.slice(at, at + LISTING_BATCH).map(read));
      candidates.sort(byEnd);
      const found: StoreLockout[] = [];
      // Read as a check reads them, soonest first, only as many as are still to be listed (the
      // memory store reads the same ones, so both leave the same state behind).
      for (let at = 0; at < candidates.length && found.length < limit; ) {
        const batch = candidates.slice(at, at + Math.min(LISTING_BATCH, limit - found.length));
        at += batch.length;
        const checked = await Promise.all(
          batch.map(({ key }) => {
            const args = this.#args(
              key,
              'n',
              String(rule.maxAttempts),
              String(rule.windowMs),
              lockoutArg(rule),
            );
            return this.#script(args, (r) => failureReplyValid(r, rule, 'n'));
          }),
        );
        checked.forEach((reply, n) => {
          const key = (batch[n] as { key: string }).key;
          // A lockout this process saw is clamped under this rule as Redis' was (a check would
          // do both); the listing says what Redis holds. A lockout the read cut short (clamped
          // under this rule's own bound, say an escalation step) is forgotten everywhere, as
          // after a check.
          if (reply[5] === 1) this.#shortened(key, reply);
          this.#seen.left(key, rule, this.#clock.now());
          // What the deny table learnt under another rule may no longer be what Redis holds.
          this.#deny?.delete(key);
          if (reply[0] !== 0) return;
          found.push({ key, until: now + reply[2], retryAfterMs: reply[2], ban: reply[4] === 3 });
        });
      }
      this.#outage.up();
      found.sort(byEnd);
      return found;
    } catch (error) {
      this.#outage.fail(error);
      return this.#local.lockouts(prefix, limit, rule);
    }
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
   * A correct credential, in one script call: a lockout in force (in Redis or seen by this process)
   * stays and is answered as locked; otherwise the failure history is cleared (in Redis and in the
   * fallback).
   */
  recordSuccess(key: string, rule: FailureRule): Promise<Decision> {
    return this.#failure(key, rule, 's');
  }

  /**
   * Counts a failure of `key` against `member`, where only distinct members count (see
   * `Store.recordDistinct`), in one script call: the key is a failure key like any other (checked,
   * listed, banned, reset, answered locally, written back and made durable alike; the fallback
   * store counts during an outage). The log holds at most `maxAttempts` members; a member that
   * UTF-8 cannot carry, or one past 256 characters, is sent in a one-to-one form (see script.ts).
   */
  recordDistinct(key: string, member: string, rule: FailureRule): Promise<FailureDecision> {
    return this.#failure(key, rule, 'd', member);
  }

  /**
   * `member` authenticated for `group` of trust table `table` (see `Store.trust`): one script
   * call on the table's keys (one hash slot, `{<prefix><table>}:…`), bounded and evicted exactly
   * as the memory store's table. Never rejects: a Redis failure is a store error like any other
   * (logged once per outage, then outage mode); under `fallback` the fallback store keeps the
   * trust, under `open` and `closed` it is not kept. A failed trust write never fails a login.
   */
  trust(table: string, group: string, member: string, rule: TrustRule): Promise<void> {
    const call = this.#trustCall(table, group, member, rule);
    return call instanceof ScriptCall ? this.#sendOne(call) : Promise.resolve();
  }

  #trustCall(
    table: string,
    group: string,
    member: string,
    rule: TrustRule,
  ): ScriptCall<undefined> | undefined {
    if (!this.#outage.available()) {
      this.#trustFallback(table, group, member, rule, undefined);
      return undefined;
    }
    const args = [
      'EVALSHA',
      TRUST_SCRIPT_SHA,
      '5',
      ...trustKeys(this.#prefix, table),
      'a',
      String(rule.trustMs),
      this.#scriptClock === undefined ? '' : String(this.#scriptClock.now()),
      String(rule.maxTrusted),
      group,
      member,
    ];
    return new ScriptCall(
      args,
      TRUST_SCRIPT,
      false,
      (r): r is 1 => r === 1,
      () => {
        if (this.#outage.down) this.#outage.up();
        return undefined;
      },
      (error: unknown) => {
        this.#trustFallback(table, group, member, rule, error);
        return undefined;
      },
    );
  }

  /**
   * For each of `groups`, whether `member` holds a live trust of it in `table` (see
   * `Store.trusted`): one script call. While Redis fails: under `fallback` the fallback store
   * answers (it holds the trusts written during the outage), under `open` every group is trusted
   * (open lets through), under `closed` none is. Never rejects.
   */
  trusted(
    table: string,
    member: string,
    groups: readonly string[],
    rule: TrustRule,
  ): Promise<boolean[]> {
    const call = this.#trustedCall(table, member, groups, rule);
    return call instanceof ScriptCall ? this.#sendOne(call) : Promise.resolve(call);
  }

  #trustedCall(
    table: string,
    member: string,
    groups: readonly string[],
    rule: TrustRule,
  ): ScriptCall<boolean[]> | boolean[] {
    if (groups.length === 0) return [];
    if (!this.#outage.available())
      return this.#trustedFallback(table, member, groups, rule, undefined);
    const args = [
      'EVALSHA',
      TRUST_SCRIPT_SHA,
      '5',
      ...trustKeys(this.#prefix, table),
      'q',
      String(rule.trustMs),
      this.#scriptClock === undefined ? '' : String(this.#scriptClock.now()),
      member,
      ...groups,
    ];
    return new ScriptCall(
      args,
      TRUST_SCRIPT,
      false,
      (r): r is (0 | 1)[] => isTrustedReply(r, groups.length),
      (reply) => {
        if (this.#outage.down) this.#outage.up();
        return (reply as (0 | 1)[]).map((one) => one === 1);
      },
      (error: unknown) => this.#trustedFallback(table, member, groups, rule, error),
    );
  }

  /**
   * `calls` as one store operation (see `Store.batch`): each call prepared exactly as its method
   * prepares it (answered at once by the fallback during an outage, or by the local deny table),
   * the rest sent as one script (batch-script.ts) that runs each call's own script in turn. On a
   * Redis Cluster, which refuses a script whose keys hash to several slots, the first such batch
   * is sent again split by slot (one script per slot, all at once), and so is every batch after it.
   * A failed batch fails each of its calls as that call alone would fail (its `onError` answer).
   */
  batch(calls: readonly StoreCall[]): Promise<StoreAnswer[]> {
    const answers: Promise<StoreAnswer>[] = [];
    const ready: ScriptCall<StoreAnswer>[] = [];
    const at: number[] = [];
    for (const c of calls) {
      const prepared = this.#prepare(c);
      if (prepared instanceof ScriptCall) {
        at.push(answers.length);
        ready.push(prepared);
        answers.push(Promise.resolve(undefined));
      } else answers.push(Promise.resolve(prepared));
    }
    this.#sendAll(ready).forEach((answer, i) => {
      answers[at[i] as number] = answer;
    });
    return Promise.all(answers);
  }

  #prepare(c: StoreCall): ScriptCall<StoreAnswer> | StoreAnswer {
    switch (c.op) {
      case 'checkFailures':
        return this.#failureCall(c.key, c.rule, 'k');
      case 'recordFailure':
        return this.#failureCall(c.key, c.rule, 'r');
      case 'recordSuccess':
        return this.#failureCall(c.key, c.rule, 's');
      case 'recordDistinct':
        return this.#failureCall(c.key, c.rule, 'd', c.member);
      case 'trust':
        return this.#trustCall(c.table, c.group, c.member, c.rule);
      case 'trusted':
        return this.#trustedCall(c.table, c.member, c.groups, c.rule);
    }
  }

  /** One script call, with `EVAL` once on `NOSCRIPT`, behind a re-stamp barrier when it asks. */
  #sendOne<T>(call: ScriptCall<T>): Promise<T> {
    return this.#run(
      call.args,
      call.valid as (reply: unknown) => reply is unknown,
      call.barrier ? this.#barrier : undefined,
      call.source,
    ).then(call.done, call.failed);
  }

  /** Sends `calls`: as one batch script, or one per slot on a Cluster; answers in call order. */
  #sendAll<T>(calls: readonly ScriptCall<T>[]): Promise<T>[] {
    if (calls.length === 0) return [];
    if (calls.length === 1) return [this.#sendOne(calls[0] as ScriptCall<T>)];
    if (!this.#cluster) return this.#sendBatch(calls, true);
    const bySlot = new Map<number, number[]>();
    calls.forEach((c, i) => {
      const slot = keySlot(c.args[3] as string);
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [i]);
      else group.push(i);
    });
    const out: Promise<T>[] = [];
    for (const group of bySlot.values()) {
      const sent =
        group.length === 1
          ? [this.#sendOne(calls[group[0] as number] as ScriptCall<T>)]
          : this.#sendBatch(
              group.map((i) => calls[i] as ScriptCall<T>),
              false,
            );
      group.forEach((i, k) => {
        out[i] = sent[k] as Promise<T>;
      });
    }
    return out;
  }

  #sendBatch<T>(calls: readonly ScriptCall<T>[], mayCross: boolean): Promise<T>[] {
    const n = calls.length;
    const settled = this.#run(
      batchArgs(calls.map((c) => c.batched())),
      (r): r is unknown[] => Array.isArray(r) && r.length === n,
      this.#barrier,
      BATCH_SCRIPT,
    ).then(
      (replies): Promise<T>[] =>
        calls.map((c, i) => {
          const reply = replies[i];
          return Promise.resolve(
            c.valid(reply) ? c.done(reply) : c.failed(new RedisReplyError(reply)),
          );
        }),
      (error: unknown): Promise<T>[] => {
        if (mayCross && isCrossSlot(error)) {
          this.#cluster = true;
          return this.#sendAll(calls);
        }
        return calls.map((c) => Promise.resolve(c.failed(error)));
      },
    );
    return calls.map((_, i) => settled.then((answers) => answers[i] as Promise<T>));
  }

  #trustFallback(
    table: string,
    group: string,
    member: string,
    rule: TrustRule,
    error: unknown,
  ): void {
    if (error !== undefined) this.#outage.fail(error);
    if (this.#policy === 'fallback') this.#local.trust(table, group, member, rule);
  }

  #trustedFallback(
    table: string,
    member: string,
    groups: readonly string[],
    rule: TrustRule,
    error: unknown,
  ): boolean[] {
    if (error !== undefined) this.#outage.fail(error);
    if (this.#policy === 'fallback') return this.#local.trusted(table, member, groups, rule);
    return groups.map(() => this.#policy === 'open');
  }

  /**
   * Forgets `key` (one `DEL`, the fallback's copy and this process's memory of its lockout: a reset
   * is an admin action). While Redis fails only the local copies go; the Redis key keeps its state
   * until its TTL.
   */
  delete(key: string): Promise<void> {
    this.#deletions++;
    this.#invalidate(key);
    if (!this.#outage.available()) return Promise.resolve();
    const redisKey = this.#prefix + key;
    // DEL, ZREM and PUBLISH, pipelined on the connection: every process forgets its local copy.
    const index = indexKeyOf(this.#prefix, redisKey);
    const del = () => {
      const deleted = this.#call(['DEL', redisKey], redisKey);
      // Out of the lockout index too (same slot), so that a lifted lockout is no longer listed.
      const unlisted = this.#call(['ZREM', index, `0${redisKey}`, `1${redisKey}`], index);
      const published = this.#publish(key, key.startsWith('\u0001') ? RESET + key : key);
      return Promise.all([deleted, unlisted, published]).then(([reply]) => reply);
    };
    return this.#deadline(del, isDelReply).then(
      () => this.#outage.up(),
      (error: unknown) => this.#outage.fail(error),
    );
  }

  /**
   * Counts the keys under the prefix with `SCAN` (approximate: keys expire and appear while it
   * runs; O(keys in the database), so not for a hot path; on a Cluster only as good as the client's
   * SCAN routing: node-redis walks every primary, ioredis does not). While
   * Redis fails it reports the fallback store's size.
   */
  async size(): Promise<number> {
    if (!this.#outage.available()) return this.#local.size();
    let count = 0;
    try {
      await eachScanPage(this.#scan(this.#prefix), this.#prefix, (keys) => {
        count += keys.length;
      });
      this.#outage.up();
      return count;
    } catch (error) {
      this.#outage.fail(error);
      return this.#local.size();
    }
  }

  /**
   * A limiter whose keys start with `prefix` was reconfigured from `before` to `after`: every key
   * under it is re-stamped in Redis (one script call each, found with `SCAN`, so O(keys in the
   * database), as `MemoryStore.restamp` does in memory) and in the fallback store. Calls made while
   * the walk runs wait for it, at most half of `timeoutMs` (then they go on, and a key the walk has
   * not reached yet keeps its old expiry until it is touched). On a Cluster the walk reaches what
   * the client's `SCAN` reaches (node-redis walks every primary, ioredis one node). Never rejects:
   * a Redis failure is logged like any store error, and each key is then re-stamped when it is next
   * written under the new rule.
   */
  restamp(
    prefix: string,
    before: WindowRule | FailureRule,
    after: WindowRule | FailureRule,
  ): Promise<void> {
    this.#local.restamp(prefix, before, after);
    if (!('algorithm' in after) && this.#seen.size > 0) {
      // Lockouts this process saw that have ended are forgotten now, as the walk forgets them in
      // Redis: a clock that steps back later must not bring them back.
      const now = this.#clock.now();
      for (const [key, seen] of this.#seen)
        if (seen.until <= now && key.startsWith(prefix)) this.#seen.delete(key);
    }
    if (this.#closed || !this.#outage.available()) return Promise.resolve();
    // A test clock's time of the reconfigure: every key is re-stamped as of then (the server
    // clock, in production, moves on by itself while the walk runs).
    const at = this.#scriptClock?.now();
    const walk = this.#walk(prefix, before, after, at).then(
      () => this.#outage.up(),
      (error: unknown) => this.#outage.fail(error),
    );
    let timer: unknown;
    const barrier = new Promise<void>((resolve) => {
      timer = this.#timers.setTimeout(resolve, Math.floor(this.#timeoutMs / 2));
      // A walk that failed ends the barrier too (its error reaches the caller through `walk`).
      walk.then(resolve, resolve);
    }).then(() => {
      this.#timers.clearTimeout(timer as TimerHandle);
      if (this.#barrier === barrier) this.#barrier = undefined;
    });
    this.#barrier = barrier;
    return walk;
  }

  async #walk(
    prefix: string,
    before: WindowRule | FailureRule,
    after: WindowRule | FailureRule,
    at: number | undefined,
  ): Promise<void> {
    const failure = !('algorithm' in after);
    const op = 'algorithm' in after ? RESTAMP[after.algorithm] : 'xl';
    const numbers =
      'algorithm' in after
        ? [String(after.limit), String(after.windowMs), String(before.windowMs)]
        : [String(after.maxAttempts), String(after.windowMs), lockoutArg(after)];
    const [a, b, c] = numbers as [string, string, string];
    await eachScanPage(this.#scan(this.#prefix + prefix), this.#prefix, (keys) =>
      Promise.all(
        keys.map((redisKey) => {
          const key = redisKey.slice(this.#prefix.length);
          const args = failure
            ? this.#args(key, op, a, b, c, String(before.windowMs), at)
            : this.#args(key, op, a, b, c, undefined, at);
          return this.#run(args, isRestampReply, undefined);
        }),
      ),
    );
  }

  /** `SCAN` pages of the keys starting with `keyPrefix`, each within `timeoutMs`. */
  #scan(keyPrefix: string): ScanPage {
    const match = `${globEscape(keyPrefix)}*`;
    return (cursor) =>
      this.#deadline(
        () => this.#call(['SCAN', cursor, 'MATCH', match, 'COUNT', '1000'], undefined),
        isScanReply,
      );
  }

  /** Stops the fallback store's sweep timer. The Redis client is yours: close it yourself. */
  close(): void {
    this.#closed = true;
    if (this.#retrying !== undefined) {
      (this.#ownTimers ?? callTimers).clearTimeout(this.#retrying);
      this.#retrying = undefined;
    }
    this.#local.close();
    this.#seen.clear();
    this.#writtenBack.clear();
    this.#deny?.clear();
    const stop = this.#unsubscribe;
    this.#unsubscribe = undefined;
    if (stop !== undefined) this.#stopSubscription(stop);
  }

  #failure(
    key: string,
    rule: FailureRule,
    op: 'k' | 'r' | 'd' | 's',
    member?: string,
  ): Promise<FailureDecision> {
    const call = this.#failureCall(key, rule, op, member);
    return call instanceof ScriptCall ? this.#sendOne(call) : Promise.resolve(call);
  }

  /**
   * A failure call of `key`, ready to send, or its answer at once: the fallback's during an
   * outage, the local deny table's during a lockout it holds.
   */
  #failureCall(
    key: string,
    rule: FailureRule,
    op: 'k' | 'r' | 'd' | 's',
    member?: string,
  ): ScriptCall<FailureDecision> | FailureDecision {
    if (!this.#outage.available()) return this.#failureFallback(key, rule, op, undefined, member);
    const from = this.#clock.now();
    // A lockout held locally: a failure during it neither counts nor extends it, a success lifts
    // nothing, so every operation gets the same answer Redis would give.
    const denied = this.#deny?.failure(key, rule, from, op === 'r' || op === 'd');
    if (denied !== undefined) return denied;
    const epoch = this.#epoch;
    // During a lockout this process has seen, a failure counts nothing and a success clears
    // nothing, even in a Redis that lost the lockout: Redis is only asked for its state (a
    // failure as `v`, which re-rules the expiry of a lockout in force, as a counted one would).
    const sent =
      op !== 'k' && this.#seen.left(key, rule, this.#clock.now()) > 0
        ? op === 's'
          ? 'k'
          : 'v'
        : op;
    const args = this.#args(
      key,
      sent,
      String(rule.maxAttempts),
      String(rule.windowMs),
      lockoutArg(rule),
      sent === 'd' ? memberArg(member as string) : undefined,
    );
    return new ScriptCall(
      args,
      SCRIPT,
      true,
      (r): r is ScriptReply => failureReplyValid(r, rule, sent),
      (reply): MaybePromise<FailureDecision> => {
        const r = reply as ScriptReply;
        // A reset (here, or elsewhere through `subscribe`) after the call went out makes its reply
        // old news: it answers this call, but teaches this process nothing to remember.
        const d = this.#failureDecision(r, rule, key, op, epoch === this.#epoch);
        const deny = this.#deny;
        if (deny !== undefined) {
          if (epoch === this.#epoch)
            deny.learnFailure(key, rule, d, from, sent !== 'k' && sent !== 's');
          else deny.delete(key);
        }
        // A lockout this call wrote (started, or by a lowered maxAttempts: 4) goes into the
        // index, and with `durability` the decision waits for a replica to have it.
        if (r[0] === 0 && (r[4] === 1 || r[4] === 4 || r[2] === rule.lockoutMs)) {
          void this.#index(key, r[2], false);
          const durability = this.#durability;
          if (durability !== undefined)
            return durability.after(this.#prefix + key, from).then(() => d);
        }
        return d;
      },
      (error: unknown) => this.#failureFallback(key, rule, op, error, member),
    );
  }

  /**
   * Redis' failure decision, reconciled with the lockouts this process has seen; a lockout in it
   * is remembered only when the reply is `current` (no reset reached this process since the call
   * was sent).
   */
  #failureDecision(
    reply: ScriptReply,
    rule: FailureRule,
    key: string,
    op: 'k' | 'r' | 'd' | 's',
    current: boolean,
  ): FailureDecision {
    const d = this.#decision(reply, rule.maxAttempts, key, 'locked');
    const now = this.#clock.now();
    if (reply[5] === 1) this.#shortened(key, reply);
    const seen = this.#seen.left(key, rule, now);
    if (d.reason === 'locked') {
      // Remember it, so that it keeps refusing if Redis fails or forgets it before it ends.
      if (reply[4] === 3) {
        // A ban is Redis' to bound (by its own length, which this process does not know): it
        // replaces whatever lockout this process remembered under the key.
        this.#seen.delete(key);
        return d;
      }
      if (d.retryAfterMs >= seen) {
        if (current) this.#seen.remember(key, now + d.retryAfterMs, rule, false, now);
        return d;
      }
      // Redis holds a shorter lockout than the one this process saw (one earned again after a
      // loss, or clamped by a shorter lockoutMs of a reconfigured rule): not written back, since
      // a clamp must stand; this process still refuses until its own ends.
      return this.#lockedDecision(key, rule, seen, 'locked');
    }
    // Redis says no lockout (restarted empty, failed over, …): one this process saw still refuses,
    // and is written back.
    if (seen > 0) {
      if (current) this.#lost(key);
      return this.#lockedDecision(key, rule, seen, 'locked');
    }
    if (op === 's' && this.#local.size() > 0) {
      const local = this.#local.recordSuccess(key, rule);
      if (local.reason === 'locked') return { ...local, reason: 'locked' };
    }
    return d;
  }

  /**
   * This call ended `key`'s lockout sooner than Redis held it (a clock that stepped back, a lowered
   * lockoutMs): what this process and the others remember of the longer one goes, so that none
   * refuses past the new end. The same marked message as a reopening refund: it invalidates, and
   * cancels no refund. Its lockout index entry is moved to the new end, so that a listing takes
   * lockouts in the order of their ends as they are, as MemoryStore's does.
   */
  #shortened(key: string, reply: ScriptReply): void {
    this.#seen.delete(key);
    this.#deny?.delete(key);
    void this.#index(key, reply[2], reply[4] === 3);
    this.#publish(key, REOPENED + key).then(
      () => undefined,
      (error: unknown) => this.#outage.fail(error),
    );
  }

  #lockedDecision(
    key: string,
    rule: FailureRule,
    left: number,
    reason: 'locked' | 'fallback',
  ): FailureDecision {
    return {
      allowed: false,
      reason,
      limit: rule.maxAttempts,
      remaining: 0,
      retryAfterMs: left,
      resetMs: left,
      key,
    };
  }

  /**
   * Redis answered without a lockout this process saw (a promoted replica that never had it, a
   * Redis restarted empty): with `subscribe` (so that a reset made elsewhere would have reached
   * this process and removed it), it is written back now.
   */
  #lost(key: string): void {
    if (!this.#subscribed) return;
    const seen = this.#seen.get(key);
    if (seen === undefined) return;
    seen.pending = true;
    if (!this.#outage.down) this.#writeBackOne(key, seen, this.#clock.now());
  }

  /**
   * Writes every lockout this process has seen and that is still running back to Redis with its
   * remaining time, as after an outage (one script call each; the longer of Redis' lockout and
   * this one stands): call it when your client reports a failover or a reconnection, so that a
   * promoted replica that missed a lockout gets it from every process that saw it. Without
   * `subscribe` only the lockouts the fallback started go (a reset made in another process would
   * not reach this one, and a write-back must never undo it). During an outage they are written
   * back when Redis answers again; a write-back that fails is a store error like any other and
   * stays pending. Never rejects.
   */
  writeBackLockouts(): void {
    if (this.#closed || this.#seen.size === 0) return;
    if (this.#subscribed) for (const seen of this.#seen.values()) seen.pending = true;
    if (!this.#outage.down) this.#writeBack();
  }

  /**
   * After an outage (or when asked): writes each pending lockout back to Redis; with `subscribe`,
   * every lockout seen (Redis may be a promoted replica that lacks some). A failed write-back
   * stays pending for the next recovery.
   */
  #writeBack(): void {
    if (this.#closed || this.#seen.size === 0) return;
    const now = this.#clock.now();
    const all = this.#subscribed;
    for (const [key, seen] of this.#seen)
      if (all || seen.pending) this.#writeBackOne(key, seen, now);
  }

  #writeBackOne(key: string, seen: SeenLockout, now: number): void {
    const rule = seen.rule;
    const left = this.#seen.left(key, rule, now);
    if (left <= 0) return;
    seen.pending = true;
    // Kept in the order they were sent, so that the old ones are dropped from the front: the map
    // never holds more than the write-backs of the last 2 × timeoutMs.
    const written = this.#writtenBack;
    written.delete(key);
    for (const [k, at] of written) {
      if (now - at <= 2 * this.#timeoutMs && now >= at) break;
      written.delete(k);
    }
    written.set(key, now);
    const args = this.#args(key, 'w', String(left), String(rule.windowMs), lockoutArg(rule));
    this.#script(args, (r) => failureReplyValid(r, rule, 'w')).then(
      (reply) => {
        void this.#index(key, reply[2], reply[4] === 3);
        if (this.#seen.get(key) === seen) seen.pending = false;
      },
      (error: unknown) => {
        this.#outage.fail(error);
        this.#keepWritingBack();
      },
    );
  }

  /**
   * A write-back failed: Redis is probed every `probeIntervalMs` until it answers (the probe's
   * success writes back what is pending), even when no decision comes to start the probe (an
   * idle process whose client reported a failover). The timer is unref()ed and stops once nothing
   * is pending or Redis answered.
   */
  #keepWritingBack(): void {
    if (this.#retrying !== undefined || this.#closed) return;
    const run = () => {
      this.#retrying = undefined;
      if (this.#closed || !this.#outage.down) return;
      let pending = false;
      const now = this.#clock.now();
      for (const [key, seen] of this.#seen)
        if (seen.pending && this.#seen.left(key, seen.rule, now) > 0) {
          pending = true;
          break;
        }
      if (!pending) return;
      this.#outage.available();
      this.#keepWritingBack();
    };
    if (this.#ownTimers !== undefined) {
      this.#retrying = this.#ownTimers.setTimeout(run, this.#probeMs);
    } else {
      const timer = setTimeout(run, this.#probeMs);
      timer.unref();
      this.#retrying = timer;
    }
  }

  /**
   * `EVALSHA sha 1 <prefixed key> <op> <three numbers> [agoMs] [now]` (see script.ts for the
   * layout; only a refund sends `agoMs`).
   */
  #args(
    key: string,
    op: string,
    a: string,
    b: string,
    c: string,
    ago?: string,
    at?: number,
  ): string[] {
    const args = ['EVALSHA', SCRIPT_SHA, '1', this.#prefix + key, op, a, b, c];
    if (ago !== undefined) args.push(ago);
    if (this.#scriptClock !== undefined) args.push(String(at ?? this.#scriptClock.now()));
    return args;
  }

  /**
   * Runs the script: `EVALSHA`, then `EVAL` once if (and only if) Redis answers `NOSCRIPT`. A reply
   * that `valid` refuses rejects with a {@link RedisReplyError}: a store error like any other.
   */
  #script<T = ScriptReply>(args: string[], valid: (reply: unknown) => reply is T): Promise<T> {
    return this.#run(args, valid, this.#barrier);
  }

  /**
   * `this.#script(args, valid).then(done, failed)` in one promise: the hot path's (a consume's)
   * reply becomes its decision without a promise and three closures more per call. While
   * `portcullis:store-call` has subscribers it is exactly that chain, so the timed call is the
   * script's own.
   */
  #scriptThen<T, R>(
    args: string[],
    valid: (reply: unknown) => reply is T,
    done: (reply: T) => R,
    failed: (error: unknown) => R,
  ): Promise<R> {
    const after = this.#barrier;
    if (after !== undefined || channels.storeCall.hasSubscribers)
      return this.#run(args, valid, after).then(done, failed);
    const redisKey = args[3];
    const ms = this.#timeoutMs;
    const shared = this.#deadlines;
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      let retried = false;
      const finish = (ok: boolean, value: unknown) => {
        try {
          if (ok) resolve(done(value as T));
          else resolve(failed(value));
        } catch (error) {
          reject(error);
        }
      };
      const expire = () => {
        if (settled) return;
        settled = true;
        finish(false, new RedisTimeoutError(ms));
      };
      let pending: Pending | undefined;
      let timer: TimerHandle | undefined;
      if (shared !== undefined) pending = shared.add(expire);
      else timer = this.#timers.setTimeout(expire, ms);
      const replied = (value: unknown) => {
        if (settled) return;
        settled = true;
        if (pending !== undefined) (shared as Deadlines).remove(pending);
        else this.#timers.clearTimeout(timer as TimerHandle);
        if (valid(value)) finish(true, value);
        else finish(false, new RedisReplyError(value));
      };
      const rejected = (error: unknown) => {
        if (settled) return;
        // EVALSHA of a script Redis does not hold: sent once more with its source.
        if (!retried && isNoScript(error)) {
          retried = true;
          const again = args.slice();
          again[0] = 'EVAL';
          again[1] = SCRIPT;
          this.#call(again, redisKey).then(replied, rejected);
          return;
        }
        settled = true;
        if (pending !== undefined) (shared as Deadlines).remove(pending);
        else this.#timers.clearTimeout(timer as TimerHandle);
        finish(false, error);
      };
      this.#call(args, redisKey).then(replied, rejected);
    });
  }

  /**
   * {@link RedisStore.#script}, sent once `after` (a re-stamp walk, bounded) has settled; `script`
   * is the source whose SHA1 `args[1]` names.
   */
  #run<T>(
    args: string[],
    valid: (reply: unknown) => reply is T,
    after: Promise<void> | undefined,
    script = SCRIPT,
  ): Promise<T> {
    const redisKey = args[3];
    const send = (expired: () => boolean) =>
      this.#call(args, redisKey).catch((error: unknown) => {
        if (!isNoScript(error) || expired()) throw error;
        const again = args.slice();
        again[0] = 'EVAL';
        again[1] = script;
        return this.#call(again, redisKey);
      });
    return this.#deadline(
      (expired) => (after === undefined ? send(expired) : after.then(() => send(expired))),
      valid,
    );
  }

  /**
   * Lists a lockout of `key` that lasts `leftMs` in its slot's lockout index (one single-key
   * script call on the index, op `i`, sent after the decision and not awaited: a failure call
   * stays one script on one key, which a Cluster can run while it moves the slot), and names the
   * slot in the registry of slots that have held one (once per slot per process and hour). A
   * listing reads each entry found as a check does, so an entry lost here only goes unlisted, and
   * one left behind is never listed.
   */
  #index(key: string, leftMs: number, ban: boolean): Promise<void> {
    if (leftMs <= 0) return Promise.resolve();
    const redisKey = this.#prefix + key;
    const index = indexKeyOf(this.#prefix, redisKey);
    const [member, other] = indexMembers(redisKey, ban);
    const args = ['EVALSHA', SCRIPT_SHA, '1', index, 'i', member, String(leftMs), other];
    if (this.#scriptClock !== undefined) args.push(String(this.#scriptClock.now()));
    const listed = this.#run(args, (r): r is 1 => r === 1, undefined).then(
      () => undefined,
      () => undefined,
    );
    const slot = keySlot(redisKey);
    const now = this.#clock.now();
    const known = this.#registered.get(slot);
    if (known !== undefined && now >= known && now - known < 3_600_000) return listed;
    this.#registered.set(slot, now);
    const registry = registryKey(this.#prefix);
    const named = this.#call(['SADD', registry, String(slot)], registry).then(
      () => this.#call(['PEXPIRE', registry, String(REGISTRY_TTL_MS)], registry),
      () => {
        this.#registered.delete(slot);
      },
    );
    return Promise.all([listed, named]).then(
      () => undefined,
      () => undefined,
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
    ms = this.#timeoutMs,
  ): Promise<T> {
    const shared = ms === this.#timeoutMs ? this.#deadlines : undefined;
    const call = new Promise<T>((resolve, reject) => {
      let settled = false;
      const expire = () => {
        if (settled) return;
        settled = true;
        reject(new RedisTimeoutError(ms));
      };
      let pending: Pending | undefined;
      let timer: TimerHandle | undefined;
      if (shared !== undefined) pending = shared.add(expire);
      else timer = this.#timers.setTimeout(expire, ms);
      const stop = () => {
        settled = true;
        if (pending !== undefined) (shared as Deadlines).remove(pending);
        else this.#timers.clearTimeout(timer as TimerHandle);
      };
      run(() => settled).then(
        (value) => {
          if (settled) return;
          stop();
          if (valid(value)) resolve(value);
          else reject(new RedisReplyError(value));
        },
        (error: unknown) => {
          if (settled) return;
          stop();
          reject(error);
        },
      );
    });
    // portcullis:store-call (metrics): timed only while someone listens.
    return channels.storeCall.hasSubscribers ? timeStoreCall('redis', this.#clock, call) : call;
  }

  /**
   * A (validated) window reply to a call of `cost` (undefined: a peek) sent at `from`; the key's
   * algorithm is Redis', so a lockout seen under it is gone.
   */
  #windowDecision(
    reply: ScriptReply,
    rule: WindowRule,
    key: string,
    cost: number | undefined,
    from: number,
    epoch: number,
  ): Decision {
    // A window call never erases failure state (the script keeps it), so a lockout this process
    // saw under the same key stays remembered while it lasts; one that has ended is forgotten now,
    // as the script forgot it: a clock stepping back must not bring it back.
    if (this.#seen.size > 0) {
      const seen = this.#seen.get(key);
      if (seen !== undefined && seen.until <= this.#clock.now()) this.#seen.delete(key);
    }
    const d = this.#decision(reply, rule.limit, key, 'limited');
    const deny = this.#deny;
    if (deny !== undefined) {
      // A refusal by failure state (2) is no window's: the deny table models windows only.
      if (epoch === this.#epoch && reply[4] !== 2) deny.learnWindow(key, rule, cost, d, from);
      else deny.delete(key);
    }
    return d;
  }

  #decision(
    reply: ScriptReply,
    limit: number,
    key: string,
    refused: 'limited' | 'locked',
  ): FailureDecision {
    if (this.#outage.down) this.#outage.up();
    const allowed = reply[0] === 1;
    const d: Decision = {
      allowed,
      reason: allowed ? 'allowed' : refused,
      limit,
      remaining: reply[1],
      retryAfterMs: reply[2],
      resetMs: reply[3],
      key,
    };
    return reply[4] === 1 ? { ...d, lockoutStarted: true } : d;
  }

  /** `cost` undefined: a peek. */
  #windowFallback(
    key: string,
    rule: WindowRule,
    cost: number | undefined,
    error: unknown,
  ): Decision {
    if (error !== undefined) this.#outage.fail(error);
    let d: Decision;
    if (this.#policy === 'fallback') {
      const local =
        cost === undefined ? this.#local.peek(key, rule) : this.#local.consume(key, rule, cost);
      d = local.reason === 'overflow' ? local : { ...local, reason: 'fallback' };
    } else {
      d = this.#outage.storeError(key, rule.limit);
    }
    return this.#outage.announce(d);
  }

  /** A refund Redis could not take: under `fallback` the fallback store gets it, else it is lost. */
  #refundFallback(
    key: string,
    rule: WindowRule,
    cost: number,
    agoMs: number,
    error: unknown,
  ): void {
    if (error !== undefined) this.#outage.fail(error);
    if (this.#policy === 'fallback') this.#local.refund(key, rule, cost, agoMs);
  }

  #failureFallback(
    key: string,
    rule: FailureRule,
    op: 'k' | 'r' | 'd' | 's',
    error: unknown,
    member?: string,
  ): FailureDecision {
    if (error !== undefined) this.#outage.fail(error);
    const now = this.#clock.now();
    const seen = this.#seen.left(key, rule, now);
    let d: FailureDecision;
    if (seen > 0) {
      // Under every policy a lockout this process has seen keeps refusing; nothing is counted.
      d = this.#lockedDecision(key, rule, seen, 'fallback');
    } else if (this.#policy === 'fallback') {
      const local =
        op === 'r'
          ? this.#local.recordFailure(key, rule)
          : op === 'd'
            ? this.#local.recordDistinct(key, member as string, rule)
            : op === 'k'
              ? this.#local.checkFailures(key, rule)
              : this.#local.recordSuccess(key, rule);
      // A lockout started during the outage: remember it, and write it back when Redis returns.
      if ((local as FailureDecision).lockoutStarted)
        this.#seen.remember(key, now + local.retryAfterMs, rule, true, now);
      d = local.reason === 'overflow' ? local : { ...local, reason: 'fallback' };
    } else {
      d = this.#outage.storeError(key, rule.maxAttempts);
    }
    return this.#outage.announce(d);
  }
}
