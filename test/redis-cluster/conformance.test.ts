// RedisStore on a real Redis Cluster (3 primaries + 3 replicas on loopback, created by
// `redis-cli --cluster create`), through ioredis `Cluster` and node-redis `createCluster`:
// - every script call names its one key (EVALSHA sha 1 <key>), so each client routes it to the
//   primary that serves the key's slot: no CROSSSLOT, no redirection;
// - the shared store conformance suite, unchanged;
// - the property test of packages/redis/src/equivalence.test.ts, with its keys on three different
//   primaries: random sequences of every operation over random rules and clock steps give
//   decisions equal field for field to MemoryStore's.
import { type Decision, type FailureRule, MemoryStore, type WindowRule } from '@portcullis/core';
import { describeStoreConformance, manualClock } from '@portcullis/core/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  failureRule,
  oneRuleEach,
  type Op as SharedOp,
  opArb,
  twoRulesEach,
} from '../../packages/redis/src/equivalence-ops.test-util.js';
import { RedisStore } from '../../packages/redis/src/index.js';
import { uniquePrefix } from '../redis/helpers.js';
import {
  type Cluster,
  command,
  connectCluster,
  describeWithRedis,
  keySlot,
  pickKeys,
  type StoreClient,
  slotOwners,
  startCluster,
} from './harness.js';

type Op = SharedOp<number>;

// The operations of packages/redis/src/equivalence.test.ts without refunds and repeats (keys are
// indices here: each run maps them to three names whose slots are served by three different
// primaries).
// No restamp: its SCAN walk reaches the nodes the client's SCAN reaches (ioredis: one), which a
// Cluster property cannot hold equal to memory (see RedisStore.restamp); the single-Redis
// equivalence suite and the store conformance suite on the Cluster cover it.
const op = opArb(fc.nat(2), { refunds: false, repeats: false, restamps: false });

/** Runs per property and client (the single-Redis suite makes 300). */
const RUNS = 100;

describeWithRedis('RedisStore on a Redis Cluster (3 primaries + 3 replicas)', () => {
  let cluster: Cluster;
  let primaries: number[];
  let owner: (slot: number) => number;

  beforeAll(async () => {
    cluster = await startCluster();
    primaries = await cluster.primaries();
    owner = await slotOwners(cluster);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  for (const kind of ['ioredis', 'node-redis'] as const) {
    describe(`through ${kind}`, () => {
      let client: StoreClient;
      beforeAll(async () => {
        client = await connectCluster(kind, cluster.seeds);
      });
      afterAll(() => client?.close());

      it('routes each script call by its one key: 60 keys spread over every primary, each on the primary of its slot', async () => {
        const prefix = uniquePrefix(`route-${kind}`);
        const store = new RedisStore({
          sendCommand: client.sendCommand,
          prefix,
          onError: 'closed',
        });
        const rule = { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 } as const;
        const frule = { maxAttempts: 3, windowMs: 60_000, lockoutMs: 60_000 };
        try {
          const names = Array.from({ length: 60 }, (_, i) => `k${i}`);
          for (const name of names) {
            expect(await store.consume(`w:${name}`, rule, 2)).toMatchObject({
              allowed: true,
              reason: 'allowed',
              remaining: 3,
            });
            expect(await store.recordFailure(`f:${name}`, frule)).toMatchObject({
              allowed: true,
              reason: 'allowed',
              remaining: 2,
            });
          }
          const byPrimary = new Map<number, number>();
          for (const name of names) {
            for (const k of [`${prefix}w:${name}`, `${prefix}f:${name}`]) {
              const port = owner(keySlot(k));
              byPrimary.set(port, (byPrimary.get(port) ?? 0) + 1);
              // Asked directly (no client routing): the key lives on the primary of its slot.
              expect(await command(port, ['EXISTS', k])).toBe(1);
            }
          }
          expect([...byPrimary.keys()].sort()).toEqual([...primaries].sort());
          expect([...byPrimary.values()].reduce((a, b) => a + b)).toBe(120);
        } finally {
          store.close();
        }
      });

      describeStoreConformance(
        `RedisStore on Redis Cluster (${kind})`,
        () => {
          const clock = manualClock(1_000_000);
          const store = new RedisStore({
            sendCommand: client.sendCommand,
            prefix: uniquePrefix(`cluster-${kind}`),
            clock,
            onError: 'closed',
          });
          return {
            store,
            advance: (ms) => clock.advance(ms),
            rewind: (ms) => clock.set(clock.now() - ms),
            teardown: () => store.close(),
          };
          // A restamp walks what the client's SCAN reaches, one node of the Cluster.
        },
        { restampEveryKey: false },
      );

      /** Runs `ops` on MemoryStore and on the cluster; every decision must be equal. */
      async function run(rules: WindowRule[], frules: FailureRule[], ops: Op[]): Promise<void> {
        const clock = manualClock(1_700_000_000_000);
        const prefix = uniquePrefix(`equiv-${kind}`);
        // One key per primary.
        const keys = primaries.map(
          (port) =>
            pickKeys(
              1,
              (i) => `k${i}`,
              (name) => prefix + name,
              (slot) => owner(slot) === port,
            )[0] as string,
        );
        const memory = new MemoryStore({ clock, timers: clock, sweepIntervalMs: 2 ** 31 - 1 });
        const redis = new RedisStore({
          sendCommand: client.sendCommand,
          prefix,
          clock,
          onError: 'closed',
        });
        const windowRuleOf = (i: number) => rules[i % rules.length] as WindowRule;
        const failureRuleOf = (i: number) => frules[i % frules.length] as FailureRule;
        const same = async (r: Promise<Decision>, m: Decision) => {
          const d = await r;
          expect(d).toEqual(m);
          expect(d.reason).not.toBe('store-error');
          return d;
        };
        try {
          for (const o of ops) {
            const k = 'key' in o ? (keys[o.key] as string) : '';
            switch (o.t) {
              case 'advance':
                clock.advance(o.ms);
                break;
              case 'rewind':
                clock.set(clock.now() - o.ms);
                break;
              case 'consume': {
                const rule = windowRuleOf(o.rule);
                const d = await same(
                  redis.consume(k, rule, o.cost),
                  memory.consume(k, rule, o.cost),
                );
                if (!d.allowed && o.wait && o.cost <= rule.limit) {
                  clock.advance(d.retryAfterMs);
                  const after = await same(
                    redis.consume(k, rule, o.cost),
                    memory.consume(k, rule, o.cost),
                  );
                  expect(after.allowed).toBe(true);
                }
                break;
              }
              case 'peek': {
                const rule = windowRuleOf(o.rule);
                const d = await same(redis.peek(k, rule), memory.peek(k, rule));
                if (!d.allowed && o.wait) {
                  clock.advance(d.retryAfterMs);
                  const after = await same(redis.consume(k, rule, 1), memory.consume(k, rule, 1));
                  expect(after.allowed).toBe(true);
                }
                break;
              }
              case 'check': {
                const frule = failureRuleOf(o.frule);
                const d = await same(redis.checkFailures(k, frule), memory.checkFailures(k, frule));
                if (!d.allowed && o.wait) {
                  clock.advance(d.retryAfterMs);
                  const after = await same(
                    redis.checkFailures(k, frule),
                    memory.checkFailures(k, frule),
                  );
                  expect(after).toMatchObject({ allowed: true, remaining: frule.maxAttempts });
                }
                break;
              }
              case 'record': {
                const frule = failureRuleOf(o.frule);
                await same(redis.recordFailure(k, frule), memory.recordFailure(k, frule));
                break;
              }
              case 'success': {
                const frule = failureRuleOf(o.frule);
                await same(redis.recordSuccess(k, frule), memory.recordSuccess(k, frule));
                break;
              }
              case 'delete':
                await redis.delete(k);
                memory.delete(k);
                break;
              case 'ban': {
                const frule = failureRuleOf(o.frule);
                await same(redis.ban(k, frule, o.ms), memory.ban(k, frule, o.ms));
                break;
              }
              case 'lockouts': {
                // Every shard's index: the listing reads the lockout index of every hash slot.
                const frule = failureRuleOf(o.frule);
                expect(await redis.lockouts('', o.limit, frule)).toEqual(
                  memory.lockouts('', o.limit, frule),
                );
                break;
              }
            }
          }
        } finally {
          redis.close();
          memory.close();
        }
      }

      it('equals MemoryStore on random operation sequences, keys on three primaries', async () => {
        await fc.assert(
          fc.asyncProperty(
            oneRuleEach,
            failureRule,
            fc.array(op, { minLength: 1, maxLength: 40 }),
            (rules, frule, ops) => run(rules, [frule], ops),
          ),
          { numRuns: RUNS },
        );
      }, 60_000);

      it('equals MemoryStore when a key meets a second rule of its kind (reconfigure)', async () => {
        await fc.assert(
          fc.asyncProperty(
            twoRulesEach,
            fc.tuple(failureRule, failureRule),
            fc.array(op, { minLength: 1, maxLength: 40 }),
            (rules, frules, ops) => run(rules, frules, ops),
          ),
          { numRuns: RUNS },
        );
      }, 60_000);
    });
  }
});
