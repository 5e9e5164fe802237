// The auth layers on a real Redis Cluster (3 primaries + 3 replicas): each layer key is its own
// one-key script on the primary of its slot (the pair, account and scope keys of one attempt land
// on different primaries), the trust table's keys share one slot, and a gate over the Cluster
// answers a random attempt sequence exactly as a gate over a MemoryStore does.
import { MemoryStore } from '@portcullis/core';
import type { GateResult } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import { BATCH_SCRIPT_SHA } from '../../packages/redis/src/batch-script.js';
import { trustKeys } from '../../packages/redis/src/trust-script.js';
import { uniquePrefix } from '../redis/helpers.js';
import { answerOf, attemptSequences, layeredGate, rawOf } from '../support/layer-attempts.js';
import {
  type Cluster,
  command,
  connectCluster,
  describeWithRedis,
  keySlot,
  type StoreClient,
  slotOwners,
  startCluster,
} from './harness.js';

/** The client, pair, spray, account and scope keys of client 1's attempt at account 1. */
const attemptKeys = (prefix: string) => [
  `${prefix}auth:password:203.0.113.2`,
  `${prefix}auth.pair:password:203.0.113.2\u0000account:user1`,
  `${prefix}auth.spray:password:203.0.113.2`,
  `${prefix}auth.account:password:account:user1`,
  `${prefix}auth.scope:password:*`,
];

describeWithRedis('auth layers on a Redis Cluster', () => {
  let cluster: Cluster;
  let client: StoreClient;
  let second: StoreClient;
  let owner: (slot: number) => number;

  beforeAll(async () => {
    cluster = await startCluster();
    owner = await slotOwners(cluster);
    client = await connectCluster('ioredis', cluster.seeds);
    second = await connectCluster('node-redis', cluster.seeds);
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await second?.close();
    await cluster?.stop();
  });

  it('each layer key is its own slot, on the primary that serves it; the trust table is one slot', async () => {
    const clock = manualClock(1_800_000_000_000);
    const prefix = uniquePrefix('cluster-layers');
    const store = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      onError: 'closed',
    });
    const gate = layeredGate(store, clock, { scope: 'password' });
    expect(answerOf(await gate.run(rawOf(0), { client: 0, account: 1, outcome: 'ok' }))).toEqual([
      200,
    ]);
    expect(
      answerOf(await gate.run(rawOf(1), { client: 1, account: 1, outcome: 'invalid' })),
    ).toEqual([401, 'invalid', 0]);
    const keys = attemptKeys(prefix);
    const owners = new Set<number>();
    for (const key of keys) {
      const port = owner(keySlot(key));
      owners.add(port);
      expect([key, await command(port, ['EXISTS', key])]).toEqual([key, 1]);
    }
    // Five keys of one attempt over more than one primary: no script spans two of them.
    expect(owners.size).toBeGreaterThan(1);
    // The trust table: its keys share one hash tag, so one slot, on one primary (which holds them).
    const table = trustKeys(prefix, 'auth.trust:password');
    expect(new Set(table.map((k) => keySlot(k))).size).toBe(1);
    const port = owner(keySlot(table[0] as string));
    let held = 0;
    for (const k of table) held += (await command(port, ['EXISTS', k])) as number;
    expect(held).toBeGreaterThan(0);
    await gate.close();
    store.close();
  });

  it('a batch of keys on several slots is refused once (CROSSSLOT), then every batch goes one script per slot', async () => {
    const clock = manualClock(1_800_000_000_000);
    const prefix = uniquePrefix('cluster-batch');
    const sent: { sha: unknown; slots: number }[] = [];
    const store = new RedisStore({
      sendCommand: (args, key) => {
        if (args[0] === 'EVALSHA' || args[0] === 'EVAL') {
          const n = Number(args[2]);
          const slots = new Set(args.slice(3, 3 + n).map((k) => keySlot(String(k)))).size;
          sent.push({ sha: args[0] === 'EVAL' ? 'source' : args[1], slots });
        }
        return client.sendCommand(args, key);
      },
      prefix,
      clock,
      onError: 'closed',
    });
    const gate = layeredGate(store, clock, { scope: 'password' });
    const login = async (c: number) => {
      sent.length = 0;
      return answerOf(await gate.run(rawOf(c), { client: c, account: c, outcome: 'ok' }));
    };
    expect(await login(0)).toEqual([200]);
    // The first batch spans slots: Redis refuses it (the answers are still right), the store splits.
    expect(sent.some((c) => c.sha === BATCH_SCRIPT_SHA && c.slots > 1)).toBe(true);
    expect(await login(1)).toEqual([200]);
    // From then on no script spans two slots, and the check's five keys go as one script each
    // (unless two share a slot): as many scripts as slots.
    expect(sent.every((c) => c.slots === 1)).toBe(true);
    const keys = attemptKeys(prefix);
    const slots = new Set(keys.map((k) => keySlot(k))).size;
    // Check: one script per slot; success: the client's own success, the pair's (an escalating
    // pair is always cleared) and the two trust tables.
    const trustSlots = new Set(
      [
        trustKeys(prefix, 'auth.trust:password'),
        trustKeys(prefix, 'auth.scope-trust:password'),
      ].map((t) => keySlot(t[0] as string)),
    );
    const successSlots = new Set([
      keySlot(keys[0] as string),
      keySlot(keys[1] as string),
      ...trustSlots,
    ]).size;
    expect(sent.length).toBe(slots + successSlots);
    await gate.close();
    store.close();
  });

  it('two gates over the Cluster (two processes: ioredis and node-redis clients, one prefix) answer random attempts exactly as one gate over memory', async () => {
    await fc.assert(
      fc.asyncProperty(attemptSequences, async (ops) => {
        const clock = manualClock(1_800_000_000_000);
        const memory = layeredGate(new MemoryStore({ clock, timers: clock }), clock, {
          scope: 'password',
        });
        const prefix = uniquePrefix('cluster-layers');
        const stores = [client, second].map(
          (c) => new RedisStore({ sendCommand: c.sendCommand, prefix, clock, onError: 'closed' }),
        );
        const gates = stores.map((st) => layeredGate(st, clock, { scope: 'password' }));
        let turn = 0;
        for (const op of ops) {
          if (typeof op === 'number') {
            clock.advance(op);
            continue;
          }
          const want = answerOf((await memory.run(rawOf(op.client), op)) as GateResult);
          const gate = gates[turn++ % 2] as (typeof gates)[number];
          expect(answerOf(await gate.run(rawOf(op.client), op))).toEqual(want);
        }
        await memory.close();
        for (const g of gates) await g.close();
        for (const st of stores) st.close();
      }),
      { numRuns: 10 },
    );
  }, 120_000);
});
