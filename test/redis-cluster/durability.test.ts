// Lockouts across the SIGKILL of their primary: with `durability`, a lockout whose
// decision has returned is on a replica, so the promoted replica has it; without it, what the
// replica had not received is lost, unless a store that saw the lockout is alive to write it back.
//
// Each round stages the worst case exactly (on loopback a replica is normally less than a
// millisecond behind): the replica is cut off (SIGSTOP, then `CLIENT KILL TYPE replica` on the
// primary) and resumed 300 ms into a burst of lockout-starting failures made by a store with
// `durability: { replicas: 1 }`; those decisions can only return once the replica is back and has
// acknowledged them. The moment they have returned, the replica is cut off again, so it holds
// nothing it did not hold when they returned. Then two sets of lockouts are started by a store
// without durability: X, which a third store (with `subscribe`, wired to its client's reconnect
// event) checks and so has seen, and Y, which nobody else sees. The two writing stores are closed
// (their memory is gone), the primary is SIGKILLed and the replica resumed; once it is promoted, a
// fresh store (a new client, empty memory) checks every subject:
// - durable lockouts: all there (asserted: 0 lost), and the WAITs reached the key's primary only;
// - X: all there once the store that saw them has written them back (asserted: 0 lost);
// - Y: lost by the promoted replica (reported as a figure, `[durability figures] {…}`).
// Three rounds on a Cluster (one shard each; the durable writer through ioredis Cluster, then
// node-redis createCluster, then ioredis), one under Sentinel.
import { createFailureLimiter, type Logger } from '@portcullis/core';
import { afterAll, expect, it } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import { uniquePrefix } from '../redis/helpers.js';
import {
  type Cluster,
  command,
  connectCluster,
  connectSentinel,
  describeWithRedis,
  failureKey,
  info,
  pickKeys,
  type SentinelGroup,
  type StoreClient,
  slotOwners,
  startCluster,
  startSentinelGroup,
  subject,
  until,
} from './harness.js';

const FAILURE = { maxAttempts: 3, windowMs: 60_000, lockoutMs: 300_000 };
/** Subjects per set (durable, seen, unseen). */
const N = 6;
/** When the replica is resumed, after the durable burst started. */
const RESUME_AFTER_MS = 300;

interface Stage {
  label: string;
  /** Connects a client of `kind` that follows the deployment. */
  connect(kind: 'ioredis' | 'node-redis'): Promise<StoreClient>;
  /** Whether the primary that fails serves `slot`. */
  victim(slot: number): boolean;
  /** The primary that fails and its replica (client ports). */
  primary: number;
  replica: number;
  /** Primaries that stay (a WAIT must never reach them). */
  others: number[];
  pause(port: number): void;
  resume(port: number): void;
  kill(port: number): Promise<void>;
  /** Resolves once the replica serves as the primary (and the deployment agrees). */
  promoted(): Promise<void>;
}

interface RoundFigures {
  deployment: string;
  writer: string;
  durableBurstMs: number;
  waitsOnPrimary: number;
  /** Lockouts a fresh store did not see after the promotion: durable, and seen by nobody alive. */
  lost: { durable: number; unseen: number };
  /** From the promotion until a fresh store saw every lockout the live store had seen. */
  seenWrittenBackAfterMs: number;
}

const waits = async (port: number) =>
  Number(/calls=(\d+)/.exec((await info(port, 'commandstats'))['cmdstat_wait'] ?? '')?.[1] ?? 0);

/** A logger that keeps the codes it was given. */
function codes(): { logger: Logger; seen: unknown[] } {
  const seen: unknown[] = [];
  const keep = (fields: object, msg?: string) =>
    seen.push(`${(fields as { code?: unknown }).code}: ${msg}`);
  return { logger: { warn: keep, error: keep }, seen };
}

async function round(stage: Stage, writer: 'ioredis' | 'node-redis'): Promise<RoundFigures> {
  const prefix = uniquePrefix(`durability-${stage.label}`);
  const pick = (offset: number) =>
    pickKeys(
      N,
      (i) => subject(i + offset),
      (s) => failureKey(prefix, s),
      stage.victim,
    );
  const durableSet = pick(0);
  const seenSet = pick(60);
  const unseenSet = pick(120);
  const clients: StoreClient[] = [];
  const stores: RedisStore[] = [];
  const open = async (kind: 'ioredis' | 'node-redis') => {
    const c = await stage.connect(kind);
    clients.push(c);
    return c;
  };
  try {
    const durableClient = await open(writer);
    const durableLog = codes();
    const durable = new RedisStore({
      sendCommand: durableClient.sendCommand,
      prefix,
      timeoutMs: 6000,
      durability: { replicas: 1, timeoutMs: 5000 },
      logger: durableLog.logger,
    });
    const plainClient = await open('ioredis');
    const plain = new RedisStore({ sendCommand: plainClient.sendCommand, prefix, timeoutMs: 2000 });
    const watcherClient = await open('ioredis');
    const watcher = new RedisStore({
      sendCommand: watcherClient.sendCommand,
      prefix,
      timeoutMs: 500,
      probeIntervalMs: 100,
      ...(watcherClient.subscribe && { subscribe: watcherClient.subscribe }),
    });
    watcherClient.onReconnect(() => watcher.writeBackLockouts());
    stores.push(durable, plain, watcher);
    const burst = async (store: RedisStore, subjects: string[]) => {
      const auth = createFailureLimiter({ store, ...FAILURE });
      return Promise.all(
        subjects.map(async (s) => {
          const decisions = [];
          for (let i = 0; i < FAILURE.maxAttempts; i++) decisions.push(await auth.recordFailure(s));
          // The limiter keeps lockoutStarted to itself: a lockout that just started waits lockoutMs.
          return decisions.map((d) => [d.allowed, d.reason, d.retryAfterMs]);
        }),
      );
    };
    const started = [
      ...Array(FAILURE.maxAttempts - 1).fill([true, 'allowed', 0]),
      [false, 'locked', FAILURE.lockoutMs],
    ];
    const cutReplica = async () => {
      stage.pause(stage.replica);
      expect(await command(stage.primary, ['CLIENT', 'KILL', 'TYPE', 'replica'])).toBe(1);
    };
    const waitsBefore = await waits(stage.primary);
    const othersBefore = await Promise.all(stage.others.map(waits));

    // The durable burst, while the replica is cut off; it is resumed 300 ms in.
    await cutReplica();
    const t0 = Date.now();
    const resumed = new Promise<void>((resolve) =>
      setTimeout(() => {
        stage.resume(stage.replica);
        resolve();
      }, RESUME_AFTER_MS),
    );
    const durableDecisions = await burst(durable, durableSet);
    const durableBurstMs = Date.now() - t0;
    await resumed;
    // From here on the replica receives nothing: what it has, it had when those decisions returned.
    await cutReplica();
    expect(durableDecisions, `${stage.label}, ${writer}`).toEqual(durableSet.map(() => started));
    // The decisions waited for the replica: they cannot have returned before it was resumed.
    expect(durableBurstMs).toBeGreaterThanOrEqual(RESUME_AFTER_MS);
    expect(durableLog.seen.join('; '), `${stage.label}, ${writer}`).toBe('');
    const waitsOnPrimary = (await waits(stage.primary)) - waitsBefore;
    expect(waitsOnPrimary).toBe(N);
    expect(await Promise.all(stage.others.map(waits))).toEqual(othersBefore);

    // Without durability, on the primary alone; the watcher sees the first set.
    expect(await burst(plain, seenSet)).toEqual(seenSet.map(() => started));
    expect(await burst(plain, unseenSet)).toEqual(unseenSet.map(() => started));
    const watch = createFailureLimiter({ store: watcher, ...FAILURE });
    for (const s of seenSet)
      expect(await watch.check(s)).toMatchObject({ allowed: false, reason: 'locked' });
    // The writers' memory goes; then the primary.
    durable.close();
    plain.close();
    await durableClient.close();
    await plainClient.close();
    await stage.kill(stage.primary);
    stage.resume(stage.replica);
    await stage.promoted();
    const promotedAt = Date.now();

    const freshClient = await open('ioredis');
    const fresh = new RedisStore({
      sendCommand: freshClient.sendCommand,
      prefix,
      onError: 'closed',
    });
    stores.push(fresh);
    const auth = createFailureLimiter({ store: fresh, ...FAILURE });
    const missing = async (subjects: string[]) => {
      let lost = 0;
      for (const s of subjects) {
        const d = await auth.check(s);
        expect(d.reason, s).not.toBe('store-error');
        if (d.allowed) lost++;
      }
      return lost;
    };
    const lostDurable = await missing(durableSet);
    const lostUnseen = await missing(unseenSet);
    await until(
      async () => (await missing(seenSet)) === 0,
      15_000,
      'the seen lockouts written back',
    );
    const seenWrittenBackAfterMs = Date.now() - promotedAt;
    expect(lostDurable).toBe(0);
    return {
      deployment: stage.label,
      writer,
      durableBurstMs,
      waitsOnPrimary,
      lost: { durable: lostDurable, unseen: lostUnseen },
      seenWrittenBackAfterMs,
    };
  } finally {
    for (const s of stores) s.close();
    await Promise.all(clients.map((c) => c.close()));
  }
}

describeWithRedis('Lockouts across the SIGKILL of their primary', () => {
  let cluster: Cluster | undefined;
  let group: SentinelGroup | undefined;
  afterAll(async () => {
    await cluster?.stop();
    await group?.stop();
  });

  it('Cluster, 3 rounds: 0 durable lockouts lost; lockouts a live store saw are written back; the rest is the figure', async () => {
    const c = await startCluster({ nodeTimeoutMs: 1000 });
    cluster = c;
    const figures: RoundFigures[] = [];
    try {
      const primaries = await c.primaries();
      const writers = ['ioredis', 'node-redis', 'ioredis'] as const;
      for (const [i, primary] of primaries.entries()) {
        const replica = await c.replicaOf(primary);
        const owner = await slotOwners(c);
        const live = (await c.primaries()).filter((p) => p !== primary);
        figures.push(
          await round(
            {
              label: `cluster-${i}`,
              connect: (kind) =>
                connectCluster(
                  kind,
                  c.seeds.filter((s) => c.alive(s.port)),
                ),
              victim: (slot) => owner(slot) === primary,
              primary,
              replica,
              others: live,
              pause: (port) => c.pause(port),
              resume: (port) => c.resume(port),
              kill: (port) => c.kill(port),
              async promoted() {
                await until(
                  async () => (await info(replica, 'replication'))['role'] === 'master',
                  20_000,
                  `the replica :${replica} promoted`,
                );
                await c.waitHealthy(20_000);
              },
            },
            writers[i] ?? 'ioredis',
          ),
        );
      }
      console.log(`[durability figures] ${JSON.stringify(figures)}`);
      expect(figures.map((f) => f.lost.durable)).toEqual([0, 0, 0]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${c.logs(8)}`, { cause: error });
    } finally {
      await c.stop();
      cluster = undefined;
    }
  }, 120_000);

  it('Sentinel: 0 durable lockouts lost; lockouts a live store saw are written back; the rest is the figure', async () => {
    const g = await startSentinelGroup({ downAfterMs: 1000 });
    group = g;
    try {
      const primary = await g.primary();
      const replica = g.servers.find((p) => p !== primary) as number;
      const figures = await round(
        {
          label: 'sentinel',
          connect: () => connectSentinel(g.sentinels, g.name),
          victim: () => true,
          primary,
          replica,
          others: [],
          pause: (port) => g.pause(port),
          resume: (port) => g.resume(port),
          kill: (port) => g.kill(port),
          async promoted() {
            await until(
              async () =>
                (await g.primary()) === replica &&
                (await info(replica, 'replication'))['role'] === 'master',
              20_000,
              `the sentinels promoting :${replica}`,
            );
          },
        },
        'ioredis',
      );
      console.log(`[durability figures] ${JSON.stringify([figures])}`);
      expect(figures.lost.durable).toBe(0);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${g.logs(10)}`, { cause: error });
    } finally {
      await g.stop();
      group = undefined;
    }
  }, 90_000);
});
