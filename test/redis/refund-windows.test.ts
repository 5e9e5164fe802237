// Refunds land in the window they came from. Outcome counting (skipFailedRequests) gives a failed
// request's units back after its response; seen before the fix, the refund could land in a newer
// window and let a limit of 1 admit 2: when the consume's reply arrived after its window ended, and
// when a reset and a new spend came in the same millisecond as the spend refunded.
import { MemoryStore, type RawRequest, type Store } from '@portcullis/core';
import { createRequestGate, type RawResponse, type RequestResult } from '@portcullis/core/adapter';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import {
  delivered,
  deletePrefix,
  holding,
  ioredis,
  subscriber,
  type TestClient,
  uniquePrefix,
} from './helpers.js';

const T0 = 1_700_000_000_000;
const raw: RawRequest = { socket: { remoteAddress: '203.0.113.50' }, headers: {} };

/** A response that ends when told to, with the status given. */
function response() {
  const listeners: (() => void)[] = [];
  const res = {
    statusCode: 200,
    writableFinished: false,
    once(event: 'close' | 'finish', listener: () => void) {
      if (event === 'finish') listeners.push(listener);
      return res;
    },
    end(status: number) {
      res.statusCode = status;
      res.writableFinished = true;
      for (const l of listeners.splice(0)) l();
    },
  };
  return res satisfies RawResponse;
}

/** A limit of 1 per second that gives a failed request's unit back. */
function gateOver(store: Store, clock: ManualClock) {
  return createRequestGate({ limit: 1, windowMs: 1000, skipFailedRequests: true, store, clock });
}

const settle = () => new Promise((r) => setImmediate(r));

describe('refunds land in the window they came from', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const prefix of prefixes) await deletePrefix(client.sendCommand, prefix);
    await client?.close();
  });
  const redisStore = (
    clock: ManualClock,
    extra: Partial<ConstructorParameters<typeof RedisStore>[0]> = {},
  ) => {
    const prefix = uniquePrefix('refund-windows');
    prefixes.push(prefix);
    return new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      onError: 'closed',
      ...extra,
    });
  };

  it('a consume whose reply arrives after its window ended refunds nothing into the next one', async () => {
    const clock = manualClock(T0);
    const wire = holding(client.sendCommand);
    const store = redisStore(clock, { sendCommand: wire.send, localDeny: false });
    const gate = gateOver(store, clock);
    wire.hold();
    const first = gate.run(raw, {});
    await settle();
    // Redis counted it in the window [T0, T0 + 1000); its reply is still on the way when that ends.
    clock.advance(1000);
    wire.release();
    const a = (await first) as RequestResult;
    expect(a.decision).toMatchObject({ allowed: true, remaining: 0 });
    const b = (await gate.run(raw, {})) as RequestResult;
    expect(b.decision).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
    // A failed: its unit was spent in the window that ended, not in B's.
    const resA = response();
    gate.track(a, resA, {}, resA);
    resA.end(500);
    await settle();
    await settle();
    expect(((await gate.run(raw, {})) as RequestResult).decision).toMatchObject({
      allowed: false,
      reason: 'limited',
      remaining: 0,
    });
    store.close();
  });

  const stores: [string, (clock: ManualClock) => Store][] = [
    ['MemoryStore', (clock) => new MemoryStore({ clock, timers: clock })],
    ['RedisStore', (clock) => redisStore(clock)],
    ['RedisStore without localDeny', (clock) => redisStore(clock, { localDeny: false })],
  ];

  it.each(stores)(
    '%s: spend, reset and a new spend in one millisecond: the old refund gives nothing back',
    async (_, make) => {
      const clock = manualClock(T0);
      const store = make(clock);
      const gate = gateOver(store, clock);
      const a = (await gate.run(raw, {})) as RequestResult;
      expect(a.decision).toMatchObject({ allowed: true, remaining: 0 });
      await gate.limiter.reset('203.0.113.50');
      const b = (await gate.run(raw, {})) as RequestResult;
      expect(b.decision).toMatchObject({ allowed: true, remaining: 0 });
      const resA = response();
      gate.track(a, resA, {}, resA);
      resA.end(500);
      await settle();
      await settle();
      expect(((await gate.run(raw, {})) as RequestResult).decision).toMatchObject({
        allowed: false,
        remaining: 0,
      });
      // A refund with no reset in between still gives back (B failed too).
      const resB = response();
      gate.track(b, resB, {}, resB);
      resB.end(500);
      await settle();
      await settle();
      expect(((await gate.run(raw, {})) as RequestResult).decision).toMatchObject({
        allowed: true,
        remaining: 0,
      });
      await store.close();
    },
  );

  it('a reset made in another process cancels the refunds of spends made before it', async () => {
    const clock = manualClock(T0);
    const mine = await subscriber();
    const theirs = await subscriber();
    const prefix = uniquePrefix('refund-windows');
    prefixes.push(prefix);
    const here = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: mine.subscribe,
    });
    const there = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: theirs.subscribe,
    });
    await mine.ready();
    await theirs.ready();
    const gate = gateOver(here, clock);
    const elsewhere = gateOver(there, clock);
    const a = (await gate.run(raw, {})) as RequestResult;
    await elsewhere.limiter.reset('203.0.113.50');
    await delivered(mine);
    expect(here.deletions).toBe(1);
    const b = (await elsewhere.run(raw, {})) as RequestResult;
    expect(b.decision).toMatchObject({ allowed: true, remaining: 0 });
    const resA = response();
    gate.track(a, resA, {}, resA);
    resA.end(500);
    await settle();
    await settle();
    expect(((await elsewhere.run(raw, {})) as RequestResult).decision).toMatchObject({
      allowed: false,
      remaining: 0,
    });
    here.close();
    there.close();
  });
});
