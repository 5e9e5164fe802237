// Leases on Redis beyond the shared conformance suite: two processes sharing one prefix, a
// NOSCRIPT reply, a Redis that fails under each error policy, and the key a lease lives at.
import { createConcurrencyLimiter, type LeaseRule } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  deletePrefix,
  ioredis,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { type OnError, RedisStore, type SendCommand } from './index.js';
import { LEASE_SCRIPT, LEASE_SCRIPT_SHA } from './lease-script.js';

const two: LeaseRule = { max: 2, leaseMs: 1000 };

let redis: TestClient;
const prefixes: string[] = [];
beforeAll(async () => {
  redis = await ioredis.connect();
});
afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis.sendCommand, p);
  await redis?.close();
});

function prefix(): string {
  const p = uniquePrefix('leases');
  prefixes.push(p);
  return p;
}

describe('RedisStore leases, two processes on one prefix', () => {
  it('share max: a slot one takes the other cannot, and a release by one admits the other', async () => {
    const p = prefix();
    const a = new RedisStore({ sendCommand: redis.sendCommand, prefix: p, onError: 'closed' });
    const b = new RedisStore({ sendCommand: redis.sendCommand, prefix: p, onError: 'closed' });
    const la = createConcurrencyLimiter({ max: 2, store: a });
    const lb = createConcurrencyLimiter({ max: 2, store: b });
    const first = await la.acquire('k');
    const second = await lb.acquire('k');
    const third = await la.acquire('k');
    expect([first.decision.remaining, second.decision.remaining]).toEqual([1, 0]);
    expect(third.decision).toMatchObject({ allowed: false, reason: 'limited', remaining: 0 });
    first.release();
    // release() gives the slot back without waiting: ask Redis until it has heard.
    await vi.waitFor(async () =>
      expect(await redis.sendCommand(['ZCARD', `${p}~leases:default:k`], undefined)).toBe(1),
    );
    const fourth = await lb.acquire('k');
    expect(fourth.decision).toMatchObject({ allowed: true, remaining: 0 });
    second.release();
    fourth.release();
    a.close();
    b.close();
  });

  it('a race of 60 acquires from both holds exactly max', async () => {
    const p = prefix();
    const a = new RedisStore({ sendCommand: redis.sendCommand, prefix: p, onError: 'closed' });
    const b = new RedisStore({ sendCommand: redis.sendCommand, prefix: p, onError: 'closed' });
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).acquire('race', two, `l${i}`)),
    );
    expect(answers.filter((x) => x.acquired)).toHaveLength(2);
    expect(answers.map((x) => x.held).every((held) => held === 1 || held === 2)).toBe(true);
    a.close();
    b.close();
  });

  it('live at <prefix>~leases:<key>, a sorted set that expires with its latest lease', async () => {
    const p = prefix();
    const store = new RedisStore({ sendCommand: redis.sendCommand, prefix: p, onError: 'closed' });
    await store.acquire('where', { max: 3, leaseMs: 5000 }, 'x');
    const key = `${p}~leases:where`;
    expect(await redis.sendCommand(['TYPE', key], undefined)).toBe('zset');
    expect(await redis.sendCommand(['ZRANGE', key, '0', '-1'], undefined)).toEqual(['x']);
    const ttl = Number(await redis.sendCommand(['PTTL', key], undefined));
    expect(ttl).toBeGreaterThan(4000);
    expect(ttl).toBeLessThanOrEqual(5000);
    await store.release('where', 'x');
    expect(await redis.sendCommand(['ZCARD', key], undefined)).toBe(0);
    store.close();
  });
});

describe('RedisStore leases, a failing Redis', () => {
  const down: SendCommand = () =>
    Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));

  it.each<[OnError, object]>([
    ['fallback', { allowed: true, reason: 'fallback', limit: 2, remaining: 1 }],
    ['open', { allowed: true, reason: 'fallback', limit: 2, remaining: 2 }],
    ['closed', { allowed: false, reason: 'store-error', limit: 2, remaining: 0 }],
  ])('onError %s decides the lease', async (onError, expected) => {
    const store = new RedisStore({ sendCommand: down, onError, logger: { warn() {}, error() {} } });
    const limiter = createConcurrencyLimiter({ max: 2, store });
    const lease = await limiter.acquire('k');
    expect(lease.decision).toMatchObject(expected);
    lease.release();
    store.close();
  });

  it('fallback: the local leases hold max during the outage, and a release frees one', async () => {
    const store = new RedisStore({
      sendCommand: down,
      onError: 'fallback',
      logger: { warn() {}, error() {} },
    });
    const limiter = createConcurrencyLimiter({ max: 1, store });
    const held = await limiter.acquire('k');
    const refused = await limiter.acquire('k');
    expect([held.decision.allowed, refused.decision.allowed]).toEqual([true, false]);
    // As a window's local refusal during an outage: reason 'fallback', and a 429 (not a 503).
    expect(refused.decision).toMatchObject({ reason: 'fallback', retryAfterMs: 1000 });
    held.release();
    expect((await limiter.acquire('k')).decision).toMatchObject({
      allowed: true,
      reason: 'fallback',
    });
    store.close();
  });

  it('re-sends the lease script with EVAL on NOSCRIPT, then goes back to EVALSHA', async () => {
    const sent: string[][] = [];
    let loaded = false;
    const send: SendCommand = (args) => {
      sent.push(args);
      if (args[0] === 'EVAL') loaded = true;
      else if (!loaded) return Promise.reject(new Error('NOSCRIPT No matching script.'));
      return Promise.resolve([1, 1]);
    };
    const clock = manualClock(5000);
    const store = new RedisStore({ sendCommand: send, clock, onError: 'closed' });
    expect(await store.acquire('k', two, 'a')).toEqual({ acquired: true, held: 1 });
    expect(await store.acquire('k', two, 'a')).toEqual({ acquired: true, held: 1 });
    expect(sent.map((a) => a[0])).toEqual(['EVALSHA', 'EVAL', 'EVALSHA']);
    expect(sent[0]?.slice(1)).toEqual([
      LEASE_SCRIPT_SHA,
      '1',
      'portcullis:~leases:k',
      'a',
      'a',
      '5000',
      '2',
      '1000',
    ]);
    expect(sent[1]?.[1]).toBe(LEASE_SCRIPT);
    store.close();
  });

  it('a reply of the wrong shape is a store error, not a lease', async () => {
    const store = new RedisStore({
      sendCommand: () => Promise.resolve(['1', 'x']),
      onError: 'closed',
      logger: { warn() {}, error() {} },
    });
    expect(await store.acquire('k', two, 'a')).toEqual({
      acquired: false,
      held: 0,
      reason: 'store-error',
    });
    store.close();
  });
});
