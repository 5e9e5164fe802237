/*
 * IPv6 network budgets (docs/design.md#ipv6-networks) on Redis: two gates, each with its own
 * client and RedisStore over one prefix (two processes), answer a client rotating through the /64s
 * of a few /56s exactly as one gate over a MemoryStore does, for rateLimit and for authGuard.
 */
import { MemoryStore, type Store } from '@portcullis/core';
import {
  createAuthGate,
  createRequestGate,
  type GateResult,
  type RequestResult,
} from '@portcullis/core/adapter';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { RedisStore } from '@portcullis/redis';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

/** A step: a request from /64 number `host` of /56 number `site` of one /48, or time passing. */
type Step = { readonly site: number; readonly host: number; readonly right: boolean } | number;
const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    { weight: 9, arbitrary: fc.record({ site: fc.nat(2), host: fc.nat(40), right: fc.boolean() }) },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 40_000 }) },
  ),
  { minLength: 20, maxLength: 120 },
);
/**
 * One sequence that always reaches the networks' limits: twelve wrong requests from twelve /64s of
 * one /56 (the /56 allows 8 of a 2-per-client budget), so the comparison never rests on chance.
 */
const throughOneSite: Step[] = Array.from({ length: 12 }, (_, host) => ({
  site: 0,
  host,
  right: false,
}));
const rawOf = (s: { site: number; host: number }) => ({
  socket: { remoteAddress: `2001:db8:5:${((s.site << 8) | s.host).toString(16)}::1` },
  headers: {},
});

function stores(clock: ManualClock): [Store, Store, Store] {
  const prefix = uniquePrefix('v6nets');
  prefixes.push(prefix);
  const redis = (c: TestClient) =>
    new RedisStore({ sendCommand: c.sendCommand, prefix, clock, onError: 'closed' });
  return [new MemoryStore({ clock, timers: clock }), redis(a), redis(b)];
}

describe('ipv6Networks on Redis, two processes', () => {
  it('rateLimit: every answer and header as one memory gate', async () => {
    let networkRefusals = 0;
    await fc.assert(
      fc.asyncProperty(steps, async (ops) => {
        const clock = manualClock(T0);
        const [memory, ...shared] = stores(clock).map((store) =>
          createRequestGate({ limit: 2, windowMs: 30_000, store, clock, ipv6Networks: true }),
        );
        let turn = 0;
        for (const op of ops) {
          if (typeof op === 'number') {
            clock.advance(op);
            continue;
          }
          const want = (await memory?.run(rawOf(op), {})) as RequestResult;
          const got = (await shared[turn++ % 2]?.run(rawOf(op), {})) as RequestResult;
          if (!got.ok && /\/(56|48)$/.test(got.decision.key)) networkRefusals++;
          expect([got.ok, got.decision.key, got.headers]).toEqual([
            want.ok,
            want.decision.key,
            want.headers,
          ]);
        }
      }),
      {
        numRuns: Number(process.env.LAYER_REDIS_RUNS ?? 12),
        examples: [[throughOneSite]],
      },
    );
    // throughOneSite guarantees the comparison covers the networks' refusals.
    expect(networkRefusals).toBeGreaterThan(0);
  }, 120_000);

  it('authGuard: every answer as one memory gate, network lockouts included', async () => {
    let networkRefusals = 0;
    await fc.assert(
      fc.asyncProperty(steps, async (ops) => {
        const clock = manualClock(T0);
        const [memory, ...shared] = stores(clock).map((store) =>
          createAuthGate<{ right: boolean }>({
            verify: (r) => (r.right ? 'ok' : 'invalid'),
            maxAttempts: 2,
            windowMs: 30_000,
            lockoutMs: 60_000,
            store,
            clock,
            timers: clock,
            ipv6Networks: true,
          }),
        );
        let turn = 0;
        const answer = (r: GateResult) => [r.ok, r.decision?.key, r.decision?.reason];
        for (const op of ops) {
          if (typeof op === 'number') {
            clock.advance(op);
            continue;
          }
          const want = (await memory?.run(rawOf(op), op)) as GateResult;
          const got = (await shared[turn++ % 2]?.run(rawOf(op), op)) as GateResult;
          if (!got.ok && /\/(56|48)$/.test(got.decision?.key ?? '')) networkRefusals++;
          expect(answer(got)).toEqual(answer(want));
        }
      }),
      {
        numRuns: Number(process.env.LAYER_REDIS_RUNS ?? 12),
        examples: [[throughOneSite]],
      },
    );
    // throughOneSite guarantees the comparison covers the networks' refusals.
    expect(networkRefusals).toBeGreaterThan(0);
  }, 120_000);
});
