/*
 * The auth layers on Redis (docs/design.md#defence-in-depth), exact across processes: two gates,
 * each with its own client and RedisStore over one prefix (two gateway processes), answer a random
 * sequence of attempts exactly as one gate over a MemoryStore does, and a burst of concurrent
 * failures through both starts each layer's lockout exactly once.
 */
import { MemoryStore } from '@portcullis/core';
import { createAuthGate, type GateResult } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { RedisStore } from '@portcullis/redis';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Attempt,
  answerOf,
  attemptSequences,
  layeredGate,
} from '../support/layer-attempts.js';
import { deletePrefix, ensureBuilt, ioredis, type TestClient, uniquePrefix } from './helpers.js';

const T0 = 1_800_000_000_000;

let a: TestClient;
let b: TestClient;
const prefixes: string[] = [];

beforeAll(async () => {
  ensureBuilt();
  a = await ioredis.connect();
  b = await ioredis.connect();
}, 120_000);

afterAll(async () => {
  for (const p of prefixes) await deletePrefix(a.sendCommand, p);
  await a?.close();
  await b?.close();
});

describe('auth layers on Redis, two processes', () => {
  it('two gates over two RedisStores (one prefix) answer every attempt exactly as one memory gate', async () => {
    await fc.assert(
      fc.asyncProperty(attemptSequences, async (ops) => {
        const clock = manualClock(T0);
        const prefix = uniquePrefix('layers');
        prefixes.push(prefix);
        const memory = layeredGate(new MemoryStore({ clock, timers: clock }), clock);
        const storeA = new RedisStore({
          sendCommand: a.sendCommand,
          prefix,
          clock,
          onError: 'closed',
        });
        const storeB = new RedisStore({
          sendCommand: b.sendCommand,
          prefix,
          clock,
          onError: 'closed',
        });
        const gates = [layeredGate(storeA, clock), layeredGate(storeB, clock)];
        let turn = 0;
        for (const op of ops) {
          if (typeof op === 'number') {
            clock.advance(op);
            continue;
          }
          const raw = { socket: { remoteAddress: `203.0.113.${op.client + 1}` }, headers: {} };
          const want = answerOf((await memory.run(raw, op)) as GateResult);
          const gate = gates[turn++ % 2] as (typeof gates)[number];
          expect(answerOf(await gate.run(raw, op))).toEqual(want);
        }
        await Promise.all([memory.close(), ...gates.map((g) => g.close())]);
        await Promise.all([storeA.close(), storeB.close()]);
      }),
      { numRuns: Number(process.env.LAYER_REDIS_RUNS ?? 12) },
    );
  }, 120_000);

  it('a burst of concurrent failures through both processes starts each layer lockout exactly once', async () => {
    const clock = manualClock(T0);
    const prefix = uniquePrefix('layers-burst');
    prefixes.push(prefix);
    const started: string[] = [];
    const make = (client: TestClient) =>
      createAuthGate<Attempt>({
        verify: (r) => r.outcome,
        account: () => 'victim',
        maxAttempts: 1000,
        accountLimits: { account: { maxAttempts: 50 }, spray: false, pair: false },
        scopeBudget: { maxAttempts: 80, windowMs: 60_000, lockoutMs: 60_000 },
        onLockout: (e) => started.push(e.layer),
        store: new RedisStore({
          sendCommand: client.sendCommand,
          prefix,
          clock,
          onError: 'closed',
          localDeny: false,
        }),
        clock,
        timers: clock,
      });
    const gates = [make(a), make(b)];
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        (gates[i % 2] as (typeof gates)[number]).run(
          { socket: { remoteAddress: `10.8.${i >> 8}.${i & 255}` }, headers: {} },
          { client: i, account: 0, outcome: 'invalid' },
        ),
      ),
    );
    // Concurrent checks may all pass before any failure lands; what counts is exact: one lockout
    // per layer, never two, whichever process counted the failure that started it.
    expect(started.sort()).toEqual(['account', 'scope']);
    expect(results.every((r) => !r.ok)).toBe(true);
    for (const g of gates) await g.close();
  }, 60_000);
});
