// Exact limits across processes on a Redis Cluster: four worker processes (two through ioredis
// `Cluster`, two through node-redis `createCluster`), each with its own RedisStore, fire 600 calls
// at once each (2 400 in all) at 24 failure subjects and 24 window keys (fixed, sliding, bucket)
// spread over many slots of all three primaries. Every count is exact.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeState, ensureBuilt, uniquePrefix } from '../redis/helpers.js';
import {
  type Call,
  type Cluster,
  type Compact,
  command,
  connectCluster,
  describeWithRedis,
  failureKey,
  keySlot,
  type StoreClient,
  slotOwners,
  startCluster,
  startWorkers,
  subject,
  type Worker,
  type WorkerConfig,
  windowKey,
} from './harness.js';

const PROCESSES = 4;
const SUBJECTS = 24;
const FAILURES_PER_PROCESS = 10; // 40 per subject
const MAX_ATTEMPTS = 10;
const WINDOW_KEYS = 8; // per algorithm
const CONSUMES_PER_PROCESS = 15; // 60 per key
const LIMIT = 20;
const LIMITERS = ['fixed', 'sliding', 'bucket'] as const;

/** Every key the test touches under `prefix`: the failure subjects, then the window keys. */
function keysOf(prefix: string) {
  const subjects = Array.from({ length: SUBJECTS }, (_, i) => subject(i));
  const windowKeys = LIMITERS.flatMap((limiter) =>
    Array.from({ length: WINDOW_KEYS }, (_, i) => ({ limiter, key: `client-${i}` })),
  );
  const redisKeys = [
    ...subjects.map((s) => failureKey(prefix, s)),
    ...windowKeys.map((w) => windowKey(prefix, w.limiter, w.key)),
  ];
  return { subjects, windowKeys, redisKeys };
}

/**
 * A fresh prefix whose 48 keys hash to 48 distinct slots: with any random prefix two of them
 * share a slot in about 7 % of runs (48 keys over 16 384 slots), and the test would then prove
 * less than it says.
 */
function spreadPrefix(): string {
  for (;;) {
    const prefix = uniquePrefix('cluster-mp');
    if (new Set(keysOf(prefix).redisKeys.map(keySlot)).size === SUBJECTS + 3 * WINDOW_KEYS)
      return prefix;
  }
}

describeWithRedis('exact limits across processes on a Redis Cluster', () => {
  let cluster: Cluster;
  let workers: Worker[] = [];
  let client: StoreClient;
  const prefix = spreadPrefix();

  beforeAll(async () => {
    ensureBuilt();
    cluster = await startCluster();
    const config = (kind: 'ioredis' | 'node-redis'): WorkerConfig => ({
      connect: { type: 'cluster', kind, seeds: cluster.seeds },
      prefix,
      onError: 'closed',
      timeoutMs: 10_000,
      probeIntervalMs: 1000,
      failure: { maxAttempts: MAX_ATTEMPTS, windowMs: 60_000, lockoutMs: 300_000 },
      windows: {
        fixed: { algorithm: 'fixed-window', limit: LIMIT, windowMs: 60_000 },
        sliding: { algorithm: 'sliding-window', limit: LIMIT, windowMs: 60_000 },
        // 20 tokens an hour: not one refills during the test.
        bucket: { algorithm: 'token-bucket', limit: LIMIT, windowMs: 3_600_000 },
      },
    });
    workers = await startWorkers(
      Array.from({ length: PROCESSES }, (_, i) => {
        const kind = i % 2 === 0 ? 'ioredis' : 'node-redis';
        return { label: `${kind}-${i}`, config: config(kind) };
      }),
    );
    client = await connectCluster('ioredis', cluster.seeds);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await client?.close();
    await cluster?.stop();
  });

  it('2 400 concurrent failures and consumes from 4 processes over 48 keys on every primary: every count exact', async () => {
    const { subjects, windowKeys, redisKeys } = keysOf(prefix);
    // The keys are spread: 48 slots, all three primaries.
    const owner = await slotOwners(cluster);
    expect(new Set(redisKeys.map(keySlot)).size).toBe(48);
    expect(new Set(redisKeys.map((k) => owner(keySlot(k)))).size).toBe(3);

    const calls: Call[] = [
      ...subjects.flatMap((s) =>
        Array.from({ length: FAILURES_PER_PROCESS }, (): Call => ({ t: 'fail', subject: s })),
      ),
      ...windowKeys.flatMap((w) =>
        Array.from({ length: CONSUMES_PER_PROCESS }, (): Call => ({ t: 'consume', ...w })),
      ),
    ];
    // Each process fires its 600 calls at once, interleaved differently.
    const results = await Promise.all(
      workers.map((w, i) => {
        const order = calls
          .map((_, j) => j)
          .sort((a, b) => ((a * 7919 + i) % 613) - ((b * 7919 + i) % 613));
        return w.run(order.map((j) => calls[j] as Call)).then((decisions) => {
          const inOrder: Compact[] = new Array(calls.length);
          order.forEach((j, at) => {
            inOrder[j] = decisions[at] as Compact;
          });
          return inOrder;
        });
      }),
    );
    const all = results.flat();
    expect(all).toHaveLength(PROCESSES * calls.length);
    // Redis decided every call.
    expect(all.filter((d) => d[1] === 'store-error' || d[1] === 'fallback')).toEqual([]);

    const perCall = (index: number) => results.map((r) => r[index] as Compact);
    const failures = FAILURES_PER_PROCESS;
    for (const [s, name] of subjects.entries()) {
      const decisions = Array.from({ length: failures }, (_, j) =>
        perCall(s * failures + j),
      ).flat();
      expect(decisions).toHaveLength(40);
      // Failures 1–9 pass with 9…1 attempts left; the 10th starts the lockout and is refused, as
      // are the 30 after it.
      const allowed = decisions.filter((d) => d[0] === 1);
      expect(
        allowed.map((d) => d[2]).sort((a, b) => a - b),
        name,
      ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(decisions.filter((d) => d[0] === 0 && d[1] === 'locked')).toHaveLength(31);
      // In Redis: locked, history cleared (L expiresAt lockedUntil), for the lockout's length.
      const key = failureKey(prefix, name);
      const state = decodeState(await client.getBuffer(key));
      expect(state?.kind).toBe('L');
      expect(state?.numbers).toHaveLength(2);
      const ttl = Number(await command(owner(keySlot(key)), ['PTTL', key]));
      expect(ttl).toBeGreaterThan(290_000);
      expect(ttl).toBeLessThanOrEqual(300_000);
    }
    const base = SUBJECTS * failures;
    for (const [w, { limiter, key }] of windowKeys.entries()) {
      const decisions = Array.from({ length: CONSUMES_PER_PROCESS }, (_, j) =>
        perCall(base + w * CONSUMES_PER_PROCESS + j),
      ).flat();
      expect(decisions).toHaveLength(60);
      // Exactly 20 allowed, each unit handed out once (remaining 19…0); 40 refused.
      const allowed = decisions.filter((d) => d[0] === 1);
      expect(
        allowed.map((d) => d[2]).sort((a, b) => a - b),
        `${limiter} ${key}`,
      ).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
      expect(decisions.filter((d) => d[0] === 0 && d[1] === 'limited')).toHaveLength(40);
      const state = decodeState(await client.getBuffer(windowKey(prefix, limiter, key)));
      if (limiter === 'fixed') {
        expect(state?.kind).toBe('F');
        expect(state?.numbers[2]).toBe(LIMIT); // F expiresAt start count
      } else if (limiter === 'sliding') {
        expect(state?.kind).toBe('S');
        expect(state?.numbers.slice(2)).toEqual([0, LIMIT]); // S expiresAt start prev curr
      } else {
        expect(state?.kind).toBe('T');
        // T expiresAt scaled (tokens × windowMs) last: under one token left.
        expect(state?.numbers[1]).toBeLessThan(3_600_000);
      }
    }
  }, 60_000);
});
