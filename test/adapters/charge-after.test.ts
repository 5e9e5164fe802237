/*
 * `chargeAfter` (docs/design.md#charge-after) on every framework and both stores: what a response
 * cost is spent after it ended, in the window the request spent in; a charge larger than what is
 * left empties the window, so the next request is refused. A handler's own `charge(req, units)`
 * spends at once, in the same budget, and answers what it spent.
 */
import { createWindowLimiter, type Decision, MemoryStore, type Store } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  deletePrefix,
  ensureBuilt,
  ioredis,
  type TestClient,
  uniquePrefix,
} from '../redis/helpers.js';
import { type AnyRequest, frameworks } from './harness.js';

let redis: TestClient;
const prefixes: string[] = [];

beforeAll(async () => {
  ensureBuilt();
  redis = await ioredis.connect();
}, 60_000);

afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis.sendCommand, p);
  await redis?.close();
});

const stores: readonly { readonly name: string; make(): Store }[] = [
  { name: 'MemoryStore', make: () => new MemoryStore() },
  {
    name: 'RedisStore',
    make() {
      const prefix = uniquePrefix('charge');
      prefixes.push(prefix);
      return new RedisStore({ sendCommand: redis.sendCommand, prefix, onError: 'closed' });
    },
  },
];

describe.each(stores)('chargeAfter on $name', (storeKind) => {
  describe.each(frameworks)('$name', (fw) => {
    it('spends what each response cost; a charge past the budget empties it', async () => {
      const limiter = createWindowLimiter({ limit: 10, windowMs: 60_000, store: storeKind.make() });
      const app = await fw.build({
        rateLimit: {
          limiter,
          chargeAfter: (req: AnyRequest) => Number(req.headers['x-charge'] ?? 0),
        },
      });
      const left = async () => ((await limiter.peek('127.0.0.1')) as Decision).remaining;
      const get = (charge?: string) =>
        app.send({ path: '/limited', headers: charge === undefined ? {} : { 'x-charge': charge } });
      try {
        const first = await get('4');
        expect([first.status, first.headers.ratelimit]).toEqual([200, '"default";r=9;t=60']);
        // The charge lands once the response has ended: 1 up front + 4 after.
        await vi.waitFor(async () => expect(await left()).toBe(5), { interval: 5 });
        expect((await get()).headers.ratelimit).toBe('"default";r=4;t=60');
        expect((await get('100')).headers.ratelimit).toBe('"default";r=3;t=60');
        await vi.waitFor(async () => expect(await left()).toBe(0), { interval: 5 });
        const refused = await get();
        expect([refused.status, refused.headers['retry-after']]).toEqual([429, '60']);
      } finally {
        await app.close();
        await limiter.close();
      }
    });
  });
});

describe.each(stores)('charge(req, units) from a handler on $name', (storeKind) => {
  describe.each(frameworks)('$name', (fw) => {
    it("spends at once in the request's budget; past the budget, what is left", async () => {
      const limiter = createWindowLimiter({ limit: 10, windowMs: 60_000, store: storeKind.make() });
      const app = await fw.build({
        rateLimit: { limiter, ipv6Networks: false },
        charge: (req: AnyRequest) => Number(req.headers['x-charge'] ?? 0),
      });
      const get = async (charge: string) => {
        const r = await app.send({ path: '/limited', headers: { 'x-charge': charge } });
        return [
          r.status,
          r.headers.ratelimit,
          (JSON.parse(r.text) as { charged?: number }).charged,
        ];
      };
      try {
        // 1 up front, then 4 by the handler: the next sees 5 left, minus its own 1.
        expect(await get('4')).toEqual([200, '"default";r=9;t=60', 4]);
        expect(await get('0')).toEqual([200, '"default";r=4;t=60', 0]);
        // 3 left when it charges 100: 3 are spent.
        expect(await get('100')).toEqual([200, '"default";r=3;t=60', 3]);
        const refused = await app.send({ path: '/limited', headers: { 'x-charge': '1' } });
        expect([refused.status, refused.headers['retry-after']]).toEqual([429, '60']);
        expect(((await limiter.peek('127.0.0.1')) as Decision).remaining).toBe(0);
      } finally {
        await app.close();
        await limiter.close();
      }
    });

    it('rejects units that are not a non-negative integer, spending nothing', async () => {
      const limiter = createWindowLimiter({ limit: 10, windowMs: 60_000, store: storeKind.make() });
      const app = await fw.build({
        rateLimit: { limiter },
        charge: (req: AnyRequest) => Number(req.headers['x-charge']),
      });
      try {
        for (const bad of ['-1', '1.5', 'NaN']) {
          const r = await app.send({ path: '/limited', headers: { 'x-charge': bad } });
          expect([r.status, (JSON.parse(r.text) as { charged?: unknown }).charged]).toEqual([
            200,
            'ERR_PORTCULLIS_COST',
          ]);
        }
        // Only the three requests' own units were spent.
        expect(((await limiter.peek('127.0.0.1')) as Decision).remaining).toBe(7);
      } finally {
        await app.close();
        await limiter.close();
      }
    });
  });
});
