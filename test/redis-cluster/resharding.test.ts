// Resharding under load: four worker processes (two ioredis `Cluster`, two node-redis
// `createCluster`) spend window limits and record failures on keys whose slots move between
// primaries while the traffic runs:
// 1. slot by slot, as `redis-cli --cluster reshard` does it, but slowly enough that the traffic
//    meets every state: `CLUSTER SETSLOT <slot> IMPORTING/MIGRATING`, `MIGRATE` of the slot's key,
//    a pause during which the key lives on the target while the slot is still the source's (the
//    source answers ASK), then `CLUSTER SETSLOT <slot> NODE` (MOVED from then on);
// 2. 1 000 slots at once with `redis-cli --cluster reshard … --cluster-yes`.
// The clients follow ASK and MOVED, no decision falls to onError, and every count is exact.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeState, ensureBuilt, uniquePrefix } from '../redis/helpers.js';
import {
  type Call,
  type Cluster,
  command,
  connectCluster,
  describeWithRedis,
  failureKey,
  HOST,
  info,
  keySlot,
  pickKeys,
  REASONS,
  redisCli,
  type StoreClient,
  slotOwners,
  startCluster,
  startWorkers,
  subject,
  type TrafficEvent,
  type Worker,
  windowKey,
} from './harness.js';

const LIMIT = 200;
const MAX_ATTEMPTS = 120;
const TIMEOUT_MS = 2000;
const RESHARD_SLOTS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `INFO errorstats` counts of MOVED and ASK replies, summed over `ports`. */
async function redirections(ports: number[]): Promise<{ moved: number; ask: number }> {
  let moved = 0;
  let ask = 0;
  for (const port of ports) {
    const stats = await info(port, 'errorstats');
    moved += Number(/count=(\d+)/.exec(stats['errorstat_MOVED'] ?? '')?.[1] ?? 0);
    ask += Number(/count=(\d+)/.exec(stats['errorstat_ASK'] ?? '')?.[1] ?? 0);
  }
  return { moved, ask };
}

describeWithRedis('resharding a Redis Cluster under load', () => {
  let cluster: Cluster;
  let workers: Worker[] = [];
  let client: StoreClient;
  const prefix = uniquePrefix('reshard');

  beforeAll(async () => {
    ensureBuilt();
    cluster = await startCluster();
    workers = await startWorkers(
      (['ioredis', 'node-redis', 'ioredis', 'node-redis'] as const).map((kind, i) => ({
        label: `${kind}-${i}`,
        config: {
          connect: { type: 'cluster', kind, seeds: cluster.seeds },
          prefix,
          onError: 'closed',
          timeoutMs: TIMEOUT_MS,
          probeIntervalMs: 1000,
          failure: { maxAttempts: MAX_ATTEMPTS, windowMs: 60_000, lockoutMs: 300_000 },
          windows: { fixed: { algorithm: 'fixed-window', limit: LIMIT, windowMs: 60_000 } },
        },
      })),
    );
    client = await connectCluster('ioredis', cluster.seeds);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await client?.close();
    await cluster?.stop();
  });

  it('slots holding live keys move while 4 processes spend them: ASK and MOVED followed, counts exact', async () => {
    const [source, target, third] = (await cluster.primaries()) as [number, number, number];
    const owner = await slotOwners(cluster);
    const wKey = (name: string) => windowKey(prefix, 'fixed', name);
    const fKey = (s: string) => failureKey(prefix, s);
    // Phase 1 keys: on the source, one slot each. Phase 2 keys: in the first 1 000 slots of the
    // third primary, which redis-cli moves (it takes a source's slots in ascending order).
    const first = Math.min(
      ...(await cluster.nodes())
        .filter((n) => n.port === third)
        .flatMap((n) => n.slots.map(([a]) => a)),
    );
    const inReshard = (slot: number) => slot >= first && slot < first + RESHARD_SLOTS;
    // Sixteen slots in all: the subjects avoid the windows' slots too (the prefix is random, so
    // two independent picks could share one).
    const phase1Windows = pickKeys(
      8,
      (i) => `a-${i}`,
      wKey,
      (slot) => owner(slot) === source,
    );
    const windowSlots = new Set(phase1Windows.map((w) => keySlot(wKey(w))));
    const phase1 = {
      windows: phase1Windows,
      subjects: pickKeys(
        8,
        subject,
        fKey,
        (slot) => owner(slot) === source && !windowSlots.has(slot),
      ),
    };
    const phase2 = {
      windows: pickKeys(4, (i) => `b-${i}`, wKey, inReshard),
      subjects: pickKeys(4, (i) => subject(i + 50), fKey, inReshard),
    };
    const windows = [...phase1.windows, ...phase2.windows];
    const subjects = [...phase1.subjects, ...phase2.subjects];
    const calls: Call[] = [
      ...windows.map((key): Call => ({ t: 'consume', limiter: 'fixed', key })),
      ...subjects.map((s): Call => ({ t: 'fail', subject: s })),
    ];
    const slots1 = [...phase1.windows.map(wKey), ...phase1.subjects.map(fKey)].map(keySlot);
    expect(new Set(slots1).size).toBe(16);
    const before = await redirections(cluster.ports);

    await Promise.all(workers.map((w) => w.start(calls, 4, 20)));
    await sleep(300);

    // Phase 1: slot by slot, with pauses, from the source to the target.
    const sourceId = await cluster.idOf(source);
    const targetId = await cluster.idOf(target);
    const started = Date.now();
    for (const slot of slots1) {
      await command(target, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId]);
      await command(source, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId]);
      await sleep(40);
      for (;;) {
        const keys = (await command(source, ['CLUSTER', 'GETKEYSINSLOT', slot, 100])) as string[];
        if (keys.length === 0) break;
        for (const k of keys)
          expect(await command(source, ['MIGRATE', HOST, target, k, 0, 5000])).toBe('OK');
      }
      // The key is on the target, the slot still the source's: the source answers ASK.
      await sleep(60);
      for (const port of [target, source, third])
        await command(port, ['CLUSTER', 'SETSLOT', slot, 'NODE', targetId]);
    }
    const phase1Ms = Date.now() - started;

    // Phase 2: redis-cli moves 1 000 slots from the third primary to the source.
    const reshardStarted = Date.now();
    await redisCli([
      '--cluster',
      'reshard',
      `${HOST}:${source}`,
      '--cluster-from',
      await cluster.idOf(third),
      '--cluster-to',
      sourceId,
      '--cluster-slots',
      String(RESHARD_SLOTS),
      '--cluster-yes',
    ]);
    const phase2Ms = Date.now() - reshardStarted;
    await cluster.waitHealthy();
    await sleep(300);
    const events = (await Promise.all(workers.map((w) => w.stop()))).flat();

    // The slots moved, with their keys.
    const after = await slotOwners(cluster);
    for (const k of [...phase1.windows.map(wKey), ...phase1.subjects.map(fKey)]) {
      expect(after(keySlot(k)), k).toBe(target);
      expect(await command(target, ['EXISTS', k]), k).toBe(1);
    }
    for (const k of [...phase2.windows.map(wKey), ...phase2.subjects.map(fKey)]) {
      expect(after(keySlot(k)), k).toBe(source);
      expect(await command(source, ['EXISTS', k]), k).toBe(1);
    }
    // The clients were redirected, and followed.
    const redirected = await redirections(cluster.ports);
    const asks = redirected.ask - before.ask;
    const moves = redirected.moved - before.moved;
    expect(asks).toBeGreaterThan(0);
    expect(moves).toBeGreaterThan(0);
    // Redis decided every call: nothing fell to onError.
    const reason = (e: TrafficEvent) => REASONS[e[4]] as string;
    expect(events.filter((e) => !['allowed', 'limited', 'locked'].includes(reason(e)))).toEqual([]);
    // Units were granted while the slots moved, not only refusals.
    const grantedWhile = (from: number, ms: number) =>
      events.filter((e) => e[3] === 1 && e[0] >= from && e[0] < from + ms).length;
    expect(grantedWhile(started, phase1Ms)).toBeGreaterThan(0);
    const longestWaitMs = Math.max(...events.map((e) => e[1]));
    expect(longestWaitMs).toBeLessThan(TIMEOUT_MS);

    // Exact: what the traffic was granted plus what a final drain gets is exactly the limit.
    const drainer = workers[0] as Worker;
    for (const [i, call] of calls.entries()) {
      const granted = events.filter((e) => e[2] === i && e[3] === 1).length;
      const drained = await drainer.drain(call);
      const total = granted + drained.filter((x) => x[0] === 1).length;
      if (call.t === 'consume') {
        expect(total, call.key).toBe(LIMIT);
        expect(decodeState(await client.getBuffer(wKey(call.key)))?.numbers[2]).toBe(LIMIT);
      } else if (call.t === 'fail') {
        expect(total, call.subject).toBe(MAX_ATTEMPTS - 1);
        expect(decodeState(await client.getBuffer(fKey(call.subject)))?.kind).toBe('L');
      }
    }
    const figures = {
      decisions: events.length,
      granted: events.filter((e) => e[3] === 1).length,
      slotBySlot: { ms: phase1Ms, granted: grantedWhile(started, phase1Ms) },
      reshard: { ms: phase2Ms, granted: grantedWhile(reshardStarted, phase2Ms) },
      ask: asks,
      moved: moves,
      longestWaitMs,
      allowedBeyondLimit: 0,
    };
    console.log(`[resharding figures] ${JSON.stringify(figures)}`);
  }, 90_000);
});
