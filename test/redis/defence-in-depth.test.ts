/*
 * The auth layers on Redis (docs/design.md#defence-in-depth), exact across processes: two gates,
 * each with its own client and RedisStore over one prefix (two gateway processes), answer a random
 * sequence of attempts exactly as one gate over a MemoryStore does, and a burst of concurrent
 * failures through both starts each layer's lockout exactly once.
 */
import { MemoryStore, type Store } from '@portcullis/core';
import { type AuthGateOptions, createAuthGate, type GateResult } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { RedisStore } from '@portcullis/redis';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deletePrefix, ensureBuilt, ioredis, type TestClient, uniquePrefix } from './helpers.js';

const T0 = 1_800_000_000_000;

interface Attempt {
  readonly client: number;
  readonly account: number;
  readonly outcome: 'ok' | 'invalid' | 'missing';
}

const OPTIONS: Partial<AuthGateOptions<Attempt>> = {
  maxAttempts: 3,
  windowMs: 1000,
  lockoutMs: 2000,
  escalate: { factor: 2, maxLockoutMs: 5000 },
  accountLimits: {
    pair: { maxAttempts: 2, lockoutMs: 1500 },
    account: { maxAttempts: 4, windowMs: 1000, lockoutMs: 3000 },
    spray: { maxAccounts: 2, windowMs: 1000, lockoutMs: 2500 },
  },
  scopeBudget: { maxAttempts: 5, windowMs: 1000, lockoutMs: 2000 },
  trustMs: 3000,
};

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

function gateOver(store: Store, clock: ReturnType<typeof manualClock>) {
  return createAuthGate<Attempt>({
    ...OPTIONS,
    verify: (r) => r.outcome,
    account: (r) => `user${r.account}`,
    store,
    clock,
    timers: clock,
  });
}

function answer(r: GateResult) {
  return r.ok
    ? [200]
    : [
        r.answer.status,
        r.reason === 'rate_limited' ? r.decision?.layer : r.reason,
        r.decision?.retryAfterMs ?? 0,
      ];
}

const sequences = fc.array(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        client: fc.integer({ min: 0, max: 3 }),
        account: fc.integer({ min: 0, max: 3 }),
        outcome: fc.constantFrom(
          'ok' as const,
          'invalid' as const,
          'invalid' as const,
          'missing' as const,
        ),
      }),
    },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 1500 }) },
  ),
  { minLength: 30, maxLength: 80 },
);

describe('auth layers on Redis, two processes', () => {
  it('two gates over two RedisStores (one prefix) answer every attempt exactly as one memory gate', async () => {
    await fc.assert(
      fc.asyncProperty(sequences, async (ops) => {
        const clock = manualClock(T0);
        const prefix = uniquePrefix('layers');
        prefixes.push(prefix);
        const memory = gateOver(new MemoryStore({ clock, timers: clock }), clock);
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
        const gates = [gateOver(storeA, clock), gateOver(storeB, clock)];
        let turn = 0;
        for (const op of ops) {
          if (typeof op === 'number') {
            clock.advance(op);
            continue;
          }
          const raw = { socket: { remoteAddress: `203.0.113.${op.client + 1}` }, headers: {} };
          const want = answer((await memory.run(raw, op)) as GateResult);
          const gate = gates[turn++ % 2] as (typeof gates)[number];
          expect(answer(await gate.run(raw, op))).toEqual(want);
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
