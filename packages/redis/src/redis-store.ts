import type * as core from '@portcullis/core';
import { Batching } from './batching.js';
import { type DurableLockouts, waitingLockouts } from './durability.js';
import { Fallback } from './fallback.js';
import { FailureCalls } from './failure-calls.js';
import { IndexWriter } from './index-writer.js';
import { Invalidations } from './invalidations.js';
import { KeyWalk } from './key-walk.js';
import { LeaseCalls } from './lease-calls.js';
import { AccessCalls } from './access-calls.js';
import { LocalDeny } from './local-deny.js';
import { LockoutListing } from './lockout-listing.js';
import type { OnError, RedisStoreOptions } from './options.js';
import { Outage } from './outage.js';
import { failureReplyValid, isDelReply, isPong, type ScriptReply } from './replies.js';
import { lockoutArg, ScriptArgs } from './script-args.js';
import { ScriptCall } from './script-call.js';
import { SCRIPT } from './script.js';
import { SeenLockouts } from './seen-lockouts.js';
import { resolveSettings } from './settings.js';
import type { Shared } from './shared.js';
import { Transport } from './transport.js';
import { TrustCalls } from './trust-calls.js';
import { WindowCalls } from './window-calls.js';
import { WriteBack } from './write-back.js';

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
export class RedisStore implements core.Store {
  /** What every part reads (see shared.ts). */
  readonly #s: Shared;
  readonly #fallback: Fallback;
  readonly #batching: Batching;
  readonly #index: IndexWriter;
  readonly #invalidations: Invalidations;
  readonly #writeBack: WriteBack;
  readonly #failures: FailureCalls;
  readonly #trusts: TrustCalls;
  readonly #leases: LeaseCalls;
  readonly #access: AccessCalls;
  readonly #windows: WindowCalls;
  readonly #listing: LockoutListing;
  readonly #walk: KeyWalk;
  /** `durability` (undefined: off): the WAIT after a lockout starts. */
  readonly #durability: DurableLockouts | undefined;
  /** See {@link RedisStore.deletions}. */
  #deletions = 0;

  /**
   * @param options see {@link RedisStoreOptions}
   * @throws {PortcullisConfigError} for a missing `sendCommand`, a wrong or unknown option
   */
  constructor(options: RedisStoreOptions) {
    const o = resolveSettings(options);
    const transport = new Transport({
      send: o.send,
      timeoutMs: o.timeoutMs,
      timers: o.timers,
      clock: o.clock,
    });
    const s: Shared = {
      prefix: o.prefix,
      policy: o.policy,
      clock: o.clock,
      scriptClock: o.scriptClock,
      transport,
      args: new ScriptArgs(o.prefix, o.scriptClock),
      outage: new Outage({
        policy: o.policy,
        probeMs: o.probeMs,
        prefix: o.prefix,
        clock: o.clock,
        logger: o.logger,
        probe: () => transport.deadline(() => transport.call(['PING'], undefined), isPong),
        closed: () => s.closed,
        recovered: () => this.#writeBack.recovered(),
      }),
      seen: new SeenLockouts(o.local.maxEntries),
      deny: o.localDeny && new LocalDeny(o.localDeny.maxEntries, o.localDeny.maxStaleMs),
      local: o.local,
      epoch: 0,
      closed: false,
    };
    this.#s = s;
    this.#durability = o.durability && waitingLockouts(s.transport, o, o.durability);
    this.#fallback = new Fallback(s);
    this.#batching = new Batching(transport);
    this.#index = new IndexWriter(s);
    this.#invalidations = new Invalidations(s, o.logger);
    this.#writeBack = new WriteBack(s, {
      probeMs: o.probeMs,
      timers: o.timers,
      index: this.#index,
      invalidations: this.#invalidations,
    });
    this.#failures = new FailureCalls(s, {
      fallback: this.#fallback,
      index: this.#index,
      invalidations: this.#invalidations,
      writeBack: this.#writeBack,
      durability: this.#durability,
    });
    this.#trusts = new TrustCalls(s, this.#fallback);
    this.#leases = new LeaseCalls(s, this.#fallback);
    this.#access = new AccessCalls(s, o.subscribe, o.logger);
    this.#windows = new WindowCalls(s, this.#fallback, this.#invalidations);
    this.#listing = new LockoutListing(s, this.#failures);
    this.#walk = new KeyWalk(s);
    if (o.subscribe !== undefined)
      this.#invalidations.subscribe(o.subscribe, {
        invalidate: (key) => this.#forget(key),
        // A reset elsewhere: refunds of spends made before it give nothing back (see deletions).
        reset: (key) => {
          this.#deletions++;
          this.#writeBack.resetHeard(key);
        },
      });
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
    return this.#s.prefix;
  }

  /** The policy applied while Redis fails. */
  get onError(): OnError {
    return this.#s.policy;
  }

  /**
   * The local deny table's settings and counts (`entries` held now, `answered` calls answered
   * without Redis since the store was made), or `false` when `localDeny` is off.
   */
  get localDeny():
    | false
    | { maxEntries: number; maxStaleMs: number; entries: number; answered: number } {
    const d = this.#s.deny;
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
    return this.#s.outage.down;
  }

  /** Spends `cost` units of `key` under `rule` in one script call; a refused call spends nothing. */
  consume(key: string, rule: core.WindowRule, cost: number): Promise<core.Decision> {
    return this.#windows.consume(key, rule, cost);
  }

  /** What `consume(key, rule, 1)` would answer, changing nothing. */
  peek(key: string, rule: core.WindowRule): Promise<core.Decision> {
    return this.#windows.peek(key, rule);
  }

  /**
   * Gives back `cost` units of `key` spent `agoMs` ago (see window-calls.ts and `Store.refund`).
   * Never rejects: under `fallback` the fallback store gets the refund during an outage.
   */
  refund(...args: Parameters<core.Store['refund']>): Promise<void> {
    return this.#windows.refund(...args);
  }

  /**
   * Locks `key` out by hand for `ms` (see `Store.ban`), in one script call that also lists it in
   * the lockout index. While Redis fails the fallback store bans it, and the ban is written back
   * (as a lockout of the time it has left) when Redis answers again.
   */
  ban(key: string, rule: core.FailureRule, ms: number): Promise<core.FailureDecision> {
    const s = this.#s;
    if (!s.outage.available()) return Promise.resolve(this.#fallback.ban(key, rule, ms, undefined));
    const from = s.clock.now();
    const epoch = s.epoch;
    const { maxAttempts, windowMs } = rule;
    const args = s.args.of(
      key,
      'b',
      String(maxAttempts),
      String(windowMs),
      lockoutArg(rule),
      String(ms),
    );
    return s.transport.script(
      args,
      SCRIPT,
      (r) => failureReplyValid(r, rule, 'b'),
      (reply) => this.#banned(reply, rule, key, from, epoch),
      (error: unknown) => this.#fallback.ban(key, rule, ms, error),
    );
  }

  #banned(
    reply: ScriptReply,
    rule: core.FailureRule,
    key: string,
    from: number,
    epoch: number,
  ): Promise<core.FailureDecision> | core.FailureDecision {
    const s = this.#s;
    const current = epoch === s.epoch;
    const d = this.#failures.decide(reply, rule, key, 'k', current);
    if (current) s.deny?.learnFailure(key, rule, d, from, true);
    if (reply[0] !== 0) return d;
    // An operator's ban resolves once it is listed too (a CLI exits right after it), and with
    // `durability` once a replica has it.
    const listed = this.#index.list(key, reply[2], reply[4] === 3);
    const durable = this.#durability?.after(s.prefix + key, from);
    // A ban now in force outlasts what other processes may answer locally (a shorter lockout in
    // their deny tables): they forget it at once and ask Redis, as after a reopening refund (the
    // same marked message: it invalidates, and cancels no refund).
    const published = reply[4] === 3 ? this.#invalidations.reopened(key, true) : undefined;
    return Promise.all([listed, durable, published]).then(() => d);
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
  async lockouts(
    prefix: string,
    limit: number,
    rule: core.FailureRule,
  ): Promise<core.StoreLockout[]> {
    const s = this.#s;
    if (!s.outage.available()) return s.local.lockouts(prefix, limit, rule);
    try {
      return await this.#listing.list(prefix, limit, rule);
    } catch (error) {
      s.outage.fail(error);
      return s.local.lockouts(prefix, limit, rule);
    }
  }

  /** The failure state of `key` (locked or not), counting nothing. */
  checkFailures(key: string, rule: core.FailureRule): Promise<core.Decision> {
    return this.#failure(key, rule, 'k');
  }

  /** Counts one failure; the decision after counting (`lockoutStarted` on the one that locks). */
  recordFailure(key: string, rule: core.FailureRule): Promise<core.FailureDecision> {
    return this.#failure(key, rule, 'r');
  }

  /**
   * A correct credential, in one script call: a lockout in force (in Redis or seen by this process)
   * stays and is answered as locked; otherwise the failure history is cleared (in Redis and in the
   * fallback).
   */
  recordSuccess(key: string, rule: core.FailureRule): Promise<core.Decision> {
    return this.#failure(key, rule, 's');
  }

  /**
   * Counts a failure of `key` against `member`, where only distinct members count (see
   * `Store.recordDistinct`), in one script call: the key is a failure key like any other (checked,
   * listed, banned, reset, answered locally, written back and made durable alike; the fallback
   * store counts during an outage). The log holds at most `maxAttempts` members; a member that
   * UTF-8 cannot carry, or one past 256 characters, is sent in a one-to-one form (see script.ts).
   */
  recordDistinct(
    key: string,
    member: string,
    rule: core.FailureRule,
  ): Promise<core.FailureDecision> {
    return this.#failure(key, rule, 'd', member);
  }

  /**
   * `member` authenticated for `group` of trust table `table` (see `Store.trust`): one script
   * call on the table's keys (one hash slot, `{<prefix><table>}:…`), bounded and evicted exactly
   * as the memory store's table. Never rejects: a Redis failure is a store error like any other
   * (logged once per outage, then outage mode); under `fallback` the fallback store keeps the
   * trust, under `open` and `closed` it is not kept. A failed trust write never fails a login.
   */
  trust(table: string, group: string, member: string, rule: core.TrustRule): Promise<void> {
    const call = this.#trusts.trust(table, group, member, rule);
    return call instanceof ScriptCall ? this.#batching.one(call) : Promise.resolve();
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
    rule: core.TrustRule,
  ): Promise<boolean[]> {
    const call = this.#trusts.trusted(table, member, groups, rule);
    return call instanceof ScriptCall ? this.#batching.one(call) : Promise.resolve(call);
  }

  /**
   * Takes or renews lease `lease` of `key` (see `Store.acquire`): one script call on
   * `<prefix>~leases:<key>`, a sorted set of lease ids by expiry on the Redis clock, so every
   * process counts the same slots and a crashed one's leases expire. Never rejects: while Redis
   * fails, `fallback` holds the lease in the fallback store, `open` lets it through, `closed`
   * refuses it (`reason: 'store-error'`).
   */
  acquire(key: string, rule: core.LeaseRule, lease: string): Promise<core.LeaseAnswer> {
    const call = this.#leases.acquire(key, rule, lease);
    return call instanceof ScriptCall ? this.#batching.one(call) : Promise.resolve(call);
  }

  /** Gives lease `lease` of `key` back (see `Store.release`). Never rejects. */
  release(key: string, lease: string): Promise<void> {
    const call = this.#leases.release(key, lease);
    return call === undefined ? Promise.resolve() : this.#batching.one(call);
  }

  /**
   * The rules of access list `list` in force (see `Store.accessRules`): one script call on
   * `<prefix>~access:<list>`, a hash read on the Redis clock. Rejects when Redis fails (the list
   * keeps the rules it last read): access lists have no `onError` answer.
   */
  accessRules(list: string): Promise<core.AccessListing> {
    return this.#access.rules(list);
  }

  /**
   * Sets a rule of access list `list` (see `Store.putAccessRule`), atomically against `maxRules`,
   * then tells every process (`PUBLISH <prefix>access-changes`). Rejects when Redis fails.
   */
  putAccessRule(list: string, rule: core.AccessRuleInput, maxRules: number): Promise<boolean> {
    return this.#access.put(list, rule, maxRules);
  }

  /** Removes a rule of access list `list` (see `Store.removeAccessRule`) and tells every process. */
  removeAccessRule(list: string, subject: string): Promise<boolean> {
    return this.#access.remove(list, subject);
  }

  /**
   * Calls `changed` on every change of `list` made through this store and, with `subscribe`,
   * through any other process's (see `Store.watchAccess`).
   */
  watchAccess(list: string, changed: () => void): () => void {
    return this.#access.watch(list, changed);
  }

  /**
   * `calls` as one store operation (see `Store.batch`): each call prepared exactly as its method
   * prepares it (answered at once by the fallback during an outage, or by the local deny table),
   * the rest sent together (see batching.ts: one script, or one per slot on a Redis Cluster). A
   * failed batch fails each of its calls as that call alone would fail (its `onError` answer).
   */
  batch(calls: readonly core.StoreCall[]): Promise<core.StoreAnswer[]> {
    const answers: Promise<core.StoreAnswer>[] = [];
    const ready: ScriptCall<core.StoreAnswer>[] = [];
    const at: number[] = [];
    for (const c of calls) {
      const prepared = this.#prepare(c);
      if (prepared instanceof ScriptCall) {
        at.push(answers.length);
        ready.push(prepared);
        answers.push(Promise.resolve(undefined));
      } else answers.push(Promise.resolve(prepared));
    }
    this.#batching.all(ready).forEach((answer, i) => {
      answers[at[i] as number] = answer;
    });
    return Promise.all(answers);
  }

  #prepare(c: core.StoreCall): ScriptCall<core.StoreAnswer> | core.StoreAnswer {
    switch (c.op) {
      case 'checkFailures':
        return this.#failures.prepare(c.key, c.rule, 'k');
      case 'recordFailure':
        return this.#failures.prepare(c.key, c.rule, 'r');
      case 'recordSuccess':
        return this.#failures.prepare(c.key, c.rule, 's');
      case 'recordDistinct':
        return this.#failures.prepare(c.key, c.rule, 'd', c.member);
      case 'trust':
        return this.#trusts.trust(c.table, c.group, c.member, c.rule);
      case 'trusted':
        return this.#trusts.trusted(c.table, c.member, c.groups, c.rule);
    }
  }

  /**
   * Forgets `key` (one `DEL`, the fallback's copy and this process's memory of its lockout: a reset
   * is an admin action). While Redis fails only the local copies go; the Redis key keeps its state
   * until its TTL.
   */
  delete(key: string): Promise<void> {
    const s = this.#s;
    this.#deletions++;
    this.#forget(key);
    if (!s.outage.available()) return Promise.resolve();
    // DEL, ZREM (out of the lockout index: a lifted lockout is no longer listed) and PUBLISH
    // (every process forgets its local copy), pipelined on the connection.
    const del = () => {
      const [deleted, unlisted] = this.#index.erase(s.prefix + key);
      const published = this.#invalidations.reset(key);
      return Promise.all([deleted, unlisted, published]).then(([reply]) => reply);
    };
    return s.transport.deadline(del, isDelReply).then(
      () => s.outage.up(),
      (error: unknown) => s.outage.fail(error),
    );
  }

  /**
   * Counts the keys under the prefix with `SCAN` (approximate: keys expire and appear while it
   * runs; O(keys in the database), so not for a hot path; on a Cluster only as good as the client's
   * SCAN routing: node-redis walks every primary, ioredis does not). While
   * Redis fails it reports the fallback store's size.
   */
  async size(): Promise<number> {
    const s = this.#s;
    if (!s.outage.available()) return s.local.size();
    try {
      const count = await this.#walk.count();
      s.outage.up();
      return count;
    } catch (error) {
      s.outage.fail(error);
      return s.local.size();
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
    before: core.WindowRule | core.FailureRule,
    after: core.WindowRule | core.FailureRule,
  ): Promise<void> {
    const s = this.#s;
    s.local.restamp(prefix, before, after);
    if (!('algorithm' in after) && s.seen.size > 0) {
      // Lockouts this process saw that have ended are forgotten now, as the walk forgets them in
      // Redis: a clock that steps back later must not bring them back.
      const now = s.clock.now();
      for (const [key, seen] of s.seen)
        if (seen.until <= now && key.startsWith(prefix)) s.seen.delete(key);
    }
    if (s.closed || !s.outage.available()) return Promise.resolve();
    return this.#walk.restamp(prefix, before, after);
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
    this.#writeBack.requested();
  }

  /** Stops the fallback store's sweep timer. The Redis client is yours: close it yourself. */
  close(): void {
    const s = this.#s;
    s.closed = true;
    this.#writeBack.close();
    s.local.close();
    s.seen.clear();
    s.deny?.clear();
    this.#invalidations.close();
    this.#access.close();
  }

  #failure(
    key: string,
    rule: core.FailureRule,
    op: 'k' | 'r' | 'd' | 's',
    member?: string,
  ): Promise<core.FailureDecision> {
    const call = this.#failures.prepare(key, rule, op, member);
    return call instanceof ScriptCall ? this.#batching.one(call) : Promise.resolve(call);
  }

  /**
   * A reset or a reopening refund made anywhere: this process forgets what it held for `key` (its
   * local refusal, the lockout it saw, the fallback's copy) and what is in flight teaches nothing.
   */
  #forget(key: string): void {
    const s = this.#s;
    s.epoch++;
    s.deny?.delete(key);
    if (s.seen.size > 0) s.seen.delete(key);
    s.local.delete(key);
  }
}
