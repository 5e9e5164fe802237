// RedisStore on a real Redis Cluster (3 primaries + 3 replicas on loopback, created by
// `redis-cli --cluster create`), through ioredis `Cluster` and node-redis `createCluster`:
// - every script call names its one key (EVALSHA sha 1 <key>), so each client routes it to the
//   primary that serves the key's slot: no CROSSSLOT, no redirection;
// - the shared store conformance suite, unchanged;
// - the property test of packages/redis/src/equivalence.test.ts, with its keys on three different
//   primaries: random sequences of every operation over random rules and clock steps give
//   decisions equal field for field to MemoryStore's.
import {
  type Decision,
  type FailureRule,
  MemoryStore,
  type TrustRule,
  type WindowRule,
} from '@portcullis/core';
import { describeStoreConformance, manualClock } from '@portcullis/core/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  failureRule,
  oneRuleEach,
  type Op as SharedOp,
  opArb,
  trustRule,
  twoRulesEach,
} from '../../packages/redis/test/equivalence-ops.js';
import { RedisStore } from '../../packages/redis/src/index.js';
import { trustKeys } from '../../packages/redis/src/trust-script.js';
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

      it("keeps each trust table in one hash slot: its five keys share a slot (CLUSTER KEYSLOT), on that slot's primary", async () => {
        const prefix = uniquePrefix(`trust-${kind}`);
        const store = new RedisStore({
          sendCommand: client.sendCommand,
          prefix,
          onError: 'closed',
        });
        const rule = { trustMs: 60_000, maxTrusted: 10 };
        try {
          // Tables whose names would put their keys on different slots, `}` and `%` included.
          const tables = ['auth', 'auth.scope:gateway', 'a}b', '100%', '{x}'];
          // The prefix is random, so the five may all hash to one primary (one run in 81): one
          // more table, chosen on a primary the first is not on, makes "more than one" certain.
          const primaryOf = (table: string) =>
            owner(keySlot(trustKeys(prefix, table)[0] as string));
          let other = 0;
          while (primaryOf(`other-${other}`) === primaryOf('auth')) other++;
          tables.push(`other-${other}`);
          const primariesUsed = new Set<number>();
          for (const table of tables) {
            await store.trust(table, 'a:alice', '203.0.113.7', rule);
            expect(await store.trusted(table, '203.0.113.7', ['a:alice', 's'], rule)).toEqual([
              true,
              false,
            ]);
            const keys = trustKeys(prefix, table);
            const slots = new Set<number>();
            for (const key of keys) {
              slots.add(Number(await command(primaries[0] as number, ['CLUSTER', 'KEYSLOT', key])));
            }
            expect(slots.size).toBe(1);
            const [slot] = [...slots] as [number];
            expect(slot).toBe(keySlot(keys[0] as string));
            const port = owner(slot);
            primariesUsed.add(port);
            // Asked directly: every key of the table that holds data lives on that primary.
            for (const key of keys) expect(await command(port, ['EXISTS', key])).toBe(1);
          }
          expect(primariesUsed.size).toBeGreaterThan(1);
          expect(store.degraded).toBe(false);
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
      async function run(
        rules: WindowRule[],
        frules: FailureRule[],
        trule: TrustRule,
        ops: Op[],
      ): Promise<void> {
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
              case 'distinct': {
                const frule = failureRuleOf(o.frule);
                await same(
                  redis.recordDistinct(k, o.member, frule),
                  memory.recordDistinct(k, o.member, frule),
                );
                break;
              }
              case 'trust': {
                // Two tables: on a Cluster, each on its own slot.
                const table = `t${o.table}`;
                memory.trust(table, `g${o.group}`, `m${o.member}`, trule);
                await redis.trust(table, `g${o.group}`, `m${o.member}`, trule);
                expect(redis.degraded).toBe(false);
                break;
              }
              case 'trusted': {
                const table = `t${o.table}`;
                const groups = o.groups.map((g) => `g${g}`);
                expect(await redis.trusted(table, `m${o.member}`, groups, trule)).toEqual(
                  memory.trusted(table, `m${o.member}`, groups, trule),
                );
                expect(redis.degraded).toBe(false);
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
            trustRule,
            fc.array(op, { minLength: 1, maxLength: 40 }),
            (rules, frule, trule, ops) => run(rules, [frule], trule, ops),
          ),
          { numRuns: RUNS },
        );
      }, 60_000);

      it('equals MemoryStore when a key meets a second rule of its kind (reconfigure)', async () => {
        await fc.assert(
          fc.asyncProperty(
            twoRulesEach,
            fc.tuple(failureRule, failureRule),
            trustRule,
            fc.array(op, { minLength: 1, maxLength: 40 }),
            (rules, frules, trule, ops) => run(rules, frules, trule, ops),
          ),
          { numRuns: RUNS },
        );
      }, 60_000);
    });
  }
});
