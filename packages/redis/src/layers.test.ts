/*
 * The auth layers' store primitives across processes: two RedisStores on one prefix (two
 * connections of two different clients, as two gateway processes would hold) hammer one key or
 * one trust table at the same instant, and the answers are exactly the ones a single process
 * (MemoryStore, one call after another) gives: distinct failures lock exactly once, at exactly
 * maxAttempts members; escalating lockouts escalate exactly once per lockout; a flood of trusts
 * for one group never evicts another group's trust.
 */
import {
  type Decision,
  type FailureRule,
  MemoryStore,
  type Store,
  type TrustRule,
} from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deletePrefix,
  ioredis,
  nodeRedis,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { RedisStore } from './index.js';
import { trustKeys } from './trust-script.js';

/** A decision without its key, flagged when it started the lockout, as one sortable line. */
function line(d: Decision & { lockoutStarted?: true }): string {
  return `${d.allowed ? 'allowed' : d.reason} remaining=${d.remaining} retry=${d.retryAfterMs} reset=${d.resetMs}${d.lockoutStarted ? ' started' : ''}`;
}

/** Counts of each distinct answer. */
function tally(decisions: Decision[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const d of decisions) out[line(d)] = (out[line(d)] ?? 0) + 1;
  return out;
}

describe('two RedisStores on one prefix answer exactly as one process', () => {
  let a: TestClient;
  let b: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    a = await ioredis.connect();
    b = await nodeRedis.connect();
  });
  afterAll(async () => {
    for (const p of prefixes) {
      await deletePrefix(a.sendCommand, p);
      await deletePrefix(a.sendCommand, `{${p}`);
    }
    await a?.close();
    await b?.close();
  });

  /** Two stores on one fresh prefix and one manual clock, and the single-process reference. */
  function setup(localDeny: boolean) {
    const clock = manualClock(1_700_000_000_000);
    const prefix = uniquePrefix('layers');
    prefixes.push(prefix);
    const options = { prefix, clock, onError: 'closed' as const, localDeny };
    const stores = [
      new RedisStore({ sendCommand: a.sendCommand, ...options }),
      new RedisStore({ sendCommand: b.sendCommand, ...options }),
    ] as const;
    const memory = new MemoryStore({ clock, timers: clock, sweepIntervalMs: 2 ** 31 - 1 });
    return {
      clock,
      stores,
      memory,
      close: () => {
        for (const s of stores) s.close();
        memory.close();
      },
    };
  }

  /** `calls` issued together, alternating between the two stores. */
  function together<T>(stores: readonly Store[], calls: ((s: Store) => Promise<T> | T)[]) {
    return Promise.all(calls.map((call, i) => call(stores[i % 2] as Store)));
  }

  for (const localDeny of [false, true]) {
    it(`recordDistinct: 60 concurrent failures over 30 distinct accounts lock once, at exactly maxAttempts members (localDeny ${localDeny})`, async () => {
      const { stores, memory, close } = setup(localDeny);
      const rule: FailureRule = { maxAttempts: 10, windowMs: 600_000, lockoutMs: 3_600_000 };
      try {
        // Phase 1: 9 accounts, each failed 4 times, in any order: 9 distinct members, no lockout.
        const first = Array.from({ length: 36 }, (_, i) => `a:user${i % 9}`);
        const phase1 = await together(
          stores,
          first.map(
            (m) => (s) => s.recordDistinct?.('spray:198.51.100.7', m, rule) as Promise<Decision>,
          ),
        );
        for (const m of first) memory.recordDistinct('spray:198.51.100.7', m, rule);
        expect(phase1.every((d) => d.allowed)).toBe(true);
        for (const s of stores)
          expect(await s.checkFailures('spray:198.51.100.7', rule)).toMatchObject({
            allowed: true,
            remaining: 1,
          });
        // Phase 2: 24 new accounts at once, from both processes: the first of them locks.
        const second = Array.from({ length: 24 }, (_, i) => `a:other${i}`);
        const phase2 = await together(
          stores,
          second.map(
            (m) => (s) => s.recordDistinct?.('spray:198.51.100.7', m, rule) as Promise<Decision>,
          ),
        );
        const reference = second.map((m) => memory.recordDistinct('spray:198.51.100.7', m, rule));
        expect(tally(phase2)).toEqual(tally(reference));
        expect(tally(phase2)).toEqual({
          'locked remaining=0 retry=3600000 reset=3600000 started': 1,
          'locked remaining=0 retry=3600000 reset=3600000': 23,
        });
      } finally {
        close();
      }
    });

    it(`escalate: concurrent failures from both processes start each escalated lockout exactly once (localDeny ${localDeny})`, async () => {
      const { clock, stores, memory, close } = setup(localDeny);
      const rule: FailureRule = {
        maxAttempts: 5,
        windowMs: 60_000,
        lockoutMs: 60_000,
        escalate: { factor: 2, maxLockoutMs: 86_400_000 },
      };
      try {
        for (const length of [60_000, 120_000, 240_000, 480_000]) {
          const calls = Array.from(
            { length: 40 },
            () => (s: Store) => s.recordFailure('auth:203.0.113.9', rule) as Promise<Decision>,
          );
          const got = await together(stores, calls);
          const reference = calls.map(() => memory.recordFailure('auth:203.0.113.9', rule));
          expect(tally(got)).toEqual(tally(reference));
          expect(got.filter((d) => (d as { lockoutStarted?: true }).lockoutStarted)).toEqual([
            {
              allowed: false,
              reason: 'locked',
              limit: 5,
              remaining: 0,
              retryAfterMs: length,
              resetMs: length,
              key: 'auth:203.0.113.9',
              lockoutStarted: true,
            },
          ]);
          expect(
            got
              .filter((d) => d.allowed)
              .map((d) => d.remaining)
              .sort(),
          ).toEqual([1, 2, 3, 4]);
          // The lockout ends; the next one starts within maxLockoutMs of its end: it escalates.
          clock.advance(length);
        }
        // A success in either process forgets the step: the next lockout is lockoutMs again.
        await stores[1].recordSuccess('auth:203.0.113.9', rule);
        memory.recordSuccess('auth:203.0.113.9', rule);
        const calls = Array.from(
          { length: 10 },
          () => (s: Store) => s.recordFailure('auth:203.0.113.9', rule) as Promise<Decision>,
        );
        const got = await together(stores, calls);
        expect(tally(got)).toEqual(
          tally(calls.map(() => memory.recordFailure('auth:203.0.113.9', rule))),
        );
        expect(got.find((d) => (d as { lockoutStarted?: true }).lockoutStarted)?.retryAfterMs).toBe(
          60_000,
        );
      } finally {
        close();
      }
    });
  }

  it('trust: a flood of trusts for one account from both processes never evicts the other accounts’ trusts; each table is bounded by maxTrusted', async () => {
    const { stores, memory, close } = setup(true);
    const rule: TrustRule = { trustMs: 2_592_000_000, maxTrusted: 8 };
    try {
      await stores[0].trust('auth', 'a:alice', '192.0.2.1', rule);
      await stores[1].trust('auth', 'a:bob', '192.0.2.2', rule);
      await stores[0].trust('auth', 's', '192.0.2.1', rule);
      // 100 successes for the attacker's own account, from 100 addresses, through both processes.
      const flood = Array.from({ length: 100 }, (_, i) => `198.51.100.${i}`);
      await together(
        stores,
        flood.map((ip) => (s) => s.trust?.('auth', 'a:mallory', ip, rule) as Promise<void>),
      );
      for (const s of stores) {
        expect(await s.trusted?.('auth', '192.0.2.1', ['a:alice', 's', 'a:bob'], rule)).toEqual([
          true,
          true,
          false,
        ]);
        expect(await s.trusted?.('auth', '192.0.2.2', ['a:bob'], rule)).toEqual([true]);
      }
      // The table holds exactly maxTrusted trusts: the three, and five of the flood's.
      const [order] = trustKeys(stores[0].prefix, 'auth') as [string];
      expect(await a.sendCommand(['ZCARD', order], order)).toBe(8);
      const held = await Promise.all(
        flood.map(async (ip) => (await stores[1].trusted('auth', ip, ['a:mallory'], rule))[0]),
      );
      expect(held.filter(Boolean)).toHaveLength(5);
      // The same script, the same table in memory: the same three survive.
      memory.trust('auth', 'a:alice', '192.0.2.1', rule);
      memory.trust('auth', 'a:bob', '192.0.2.2', rule);
      memory.trust('auth', 's', '192.0.2.1', rule);
      for (const ip of flood) memory.trust('auth', 'a:mallory', ip, rule);
      expect(memory.trusted('auth', '192.0.2.1', ['a:alice', 's', 'a:bob'], rule)).toEqual([
        true,
        true,
        false,
      ]);
      // Every key of the table expires (trustMs after its newest trust): an idle table goes.
      for (const key of trustKeys(stores[0].prefix, 'auth')) {
        const ttl = Number(await a.sendCommand(['PTTL', key], key));
        expect(ttl).toBeGreaterThan(2_592_000_000 - 60_000);
        expect(ttl).toBeLessThanOrEqual(2_592_000_000);
      }
    } finally {
      close();
    }
  });
});

/**
 * Waits until the store's background probe has ended its outage. The probe's PONG is a real round
 * trip to Redis: on a loaded CI machine it outlasted 1 000 turns of the event loop (CI at
 * eb9cd25), so the wait is bounded by wall time (5 s), not by turns; no limiter time moves.
 */
async function recovered(store: RedisStore): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (store.degraded && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
  expect(store.degraded).toBe(false);
}

describe('the layers while Redis fails', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const p of prefixes) {
      await deletePrefix(client.sendCommand, p);
      await deletePrefix(client.sendCommand, `{${p}`);
    }
    await client?.close();
  });

  const trustRule: TrustRule = { trustMs: 60_000, maxTrusted: 10 };

  for (const onError of ['fallback', 'open', 'closed'] as const) {
    it(`onError '${onError}': a trust write never rejects; trusted answers ${onError === 'fallback' ? 'from the fallback store' : onError === 'open' ? 'true (open lets through)' : 'false'}`, async () => {
      const clock = manualClock(1_000_000);
      const prefix = uniquePrefix('layers-down');
      prefixes.push(prefix);
      let down = false;
      const errors: unknown[] = [];
      const store = new RedisStore({
        sendCommand: (args, key) =>
          down
            ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'))
            : client.sendCommand(args, key),
        prefix,
        clock,
        onError,
        logger: {
          warn: () => {},
          error: (obj: unknown) => errors.push(obj),
        },
      });
      try {
        await store.trust('auth', 'a:alice', '192.0.2.1', trustRule);
        down = true;
        // The write fails: it resolves all the same, and the store logs the outage once.
        await expect(store.trust('auth', 'a:bob', '192.0.2.2', trustRule)).resolves.toBe(undefined);
        expect(store.degraded).toBe(true);
        expect(errors).toHaveLength(1);
        // During the outage: fallback asks the fallback store (which kept bob's trust, not
        // alice's, written to Redis before), open trusts every group, closed none.
        const answer = await store.trusted('auth', '192.0.2.2', ['a:bob', 'a:alice'], trustRule);
        const alice = await store.trusted('auth', '192.0.2.1', ['a:alice'], trustRule);
        if (onError === 'fallback') {
          expect(answer).toEqual([true, false]);
          expect(alice).toEqual([false]);
        } else {
          expect(answer).toEqual([onError === 'open', onError === 'open']);
          expect(alice).toEqual([onError === 'open']);
        }
        // Redis answers again: what it holds answers (alice's trust survived the outage there).
        down = false;
        clock.advance(1000);
        // A probe is due: the next call starts it (in the background), and its PONG ends the outage.
        await store.checkFailures('probe', { maxAttempts: 3, windowMs: 1000, lockoutMs: 1000 });
        await recovered(store);
        expect(await store.trusted('auth', '192.0.2.1', ['a:alice'], trustRule)).toEqual([true]);
      } finally {
        store.close();
      }
    });
  }

  it("onError 'fallback': distinct failures count in the fallback during an outage, and the lockout it starts is written back", async () => {
    const clock = manualClock(1_000_000);
    const prefix = uniquePrefix('layers-spray');
    prefixes.push(prefix);
    let down = false;
    const store = new RedisStore({
      sendCommand: (args, key) =>
        down
          ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'))
          : client.sendCommand(args, key),
      prefix,
      clock,
      onError: 'fallback',
    });
    const rule: FailureRule = {
      maxAttempts: 3,
      windowMs: 60_000,
      lockoutMs: 10_000,
      escalate: { factor: 2, maxLockoutMs: 100_000 },
    };
    try {
      expect(await store.recordDistinct('spray', 'a:u1', rule)).toMatchObject({
        allowed: true,
        remaining: 2,
      });
      down = true;
      expect(await store.recordDistinct('spray', 'a:u2', rule)).toMatchObject({
        reason: 'fallback',
        remaining: 2,
      });
      expect(await store.recordDistinct('spray', 'a:u2', rule)).toMatchObject({
        reason: 'fallback',
        remaining: 2,
      });
      expect(await store.recordDistinct('spray', 'a:u3', rule)).toMatchObject({ remaining: 1 });
      expect(await store.recordDistinct('spray', 'a:u4', rule)).toEqual({
        allowed: false,
        reason: 'fallback',
        limit: 3,
        remaining: 0,
        retryAfterMs: 10_000,
        resetMs: 10_000,
        key: 'spray',
        lockoutStarted: true,
      });
      down = false;
      clock.advance(2000);
      // Recovery: the probe's PONG ends the outage, and the fallback's lockout goes back.
      await store.checkFailures('probe', rule);
      await recovered(store);
      for (
        let i = 0;
        i < 100 && (await client.sendCommand(['EXISTS', `${prefix}spray`], undefined)) !== 1;
        i++
      )
        await new Promise((r) => setImmediate(r));
      const other = new RedisStore({ sendCommand: client.sendCommand, prefix, clock });
      try {
        expect(await other.checkFailures('spray', rule)).toEqual({
          allowed: false,
          reason: 'locked',
          limit: 3,
          remaining: 0,
          retryAfterMs: 8000,
          resetMs: 8000,
          key: 'spray',
        });
      } finally {
        other.close();
      }
    } finally {
      store.close();
    }
  });
});
