/*
 * Access lists (docs/design.md#access-lists) on every framework and both stores: a deny rule by
 * address, account or origin is answered 403 ACCESS_DENIED with its reason before anything is
 * counted; an allow rule lets a request through uncounted (rateLimit, concurrency) but never
 * exempts a client from the auth guard's lockout; a change made by another process reaches this
 * one through the store's subscription, with no refresh.
 */
import {
  type AccessList,
  createAccessList,
  createWindowLimiter,
  type Decision,
  MemoryStore,
  type Store,
} from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  deletePrefix,
  ensureBuilt,
  ioredis,
  subscriber,
  type TestClient,
  uniquePrefix,
} from '../redis/helpers.js';
import { type AnyRequest, frameworks } from './harness.js';

let redis: TestClient;
const prefixes: string[] = [];
const closing: Array<() => unknown> = [];

beforeAll(async () => {
  ensureBuilt();
  redis = await ioredis.connect();
}, 60_000);

afterAll(async () => {
  for (const c of closing) await c();
  for (const p of prefixes) await deletePrefix(redis.sendCommand, p);
  await redis?.close();
});

const stores: readonly { readonly name: string; make(prefix?: string): Store }[] = [
  { name: 'MemoryStore', make: () => new MemoryStore() },
  {
    name: 'RedisStore',
    make(given) {
      const prefix = given ?? uniquePrefix('access');
      prefixes.push(prefix);
      const store = new RedisStore({ sendCommand: redis.sendCommand, prefix, onError: 'closed' });
      closing.push(() => store.close());
      return store;
    },
  },
];

const denied = (reason: string) =>
  JSON.stringify({
    code: 'ACCESS_DENIED',
    message: reason === '' ? 'access denied' : `access denied: ${reason}`,
    retryable: false,
    details: { reason },
  });

const accountOf = (req: AnyRequest) => {
  const a = req.headers['x-account'];
  return typeof a === 'string' ? a : undefined;
};

describe.each(stores)('access lists on $name', (storeKind) => {
  async function list(): Promise<AccessList> {
    const l = createAccessList({ store: storeKind.make() });
    closing.push(() => l.close());
    await l.ready();
    return l;
  }

  describe.each(frameworks)('$name', (fw) => {
    it('rateLimit: a deny is 403 with its reason, counts nothing; an allow is not limited', async () => {
      const access = await list();
      const limiter = createWindowLimiter({ limit: 2, windowMs: 60_000, store: storeKind.make() });
      const onLimited = vi.fn();
      const app = await fw.build({
        rateLimit: { limiter, access, account: accountOf, onLimited } as never,
      });
      const left = async () => ((await limiter.peek('127.0.0.1')) as Decision).remaining;
      try {
        await access.deny('127.0.0.0/8', { reason: 'abuse from this network' });
        const refused = await app.send({ path: '/limited' });
        expect([refused.status, refused.text, refused.headers.ratelimit]).toEqual([
          403,
          denied('abuse from this network'),
          undefined,
        ]);
        expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(refused.headers['retry-after']).toBe(undefined);
        expect(onLimited).not.toHaveBeenCalled();
        expect(await left()).toBe(2);

        // The most specific network decides: this address is allowed inside the denied /8.
        await access.allow('127.0.0.1');
        for (let i = 0; i < 4; i++) {
          const r = await app.send({ path: '/limited' });
          expect([r.status, r.headers.ratelimit]).toEqual([200, undefined]);
        }
        expect(await left()).toBe(2);

        // Across kinds a deny wins: the allowed address with a denied account is refused.
        await access.deny('account:mallory', { reason: 'fraud' });
        const byAccount = await app.send({ path: '/limited', headers: { 'x-account': 'mallory' } });
        expect([byAccount.status, byAccount.text]).toEqual([403, denied('fraud')]);

        await access.remove('127.0.0.1');
        await access.remove('127.0.0.0/8');
        const counted = await app.send({ path: '/limited' });
        expect([counted.status, counted.headers.ratelimit]).toEqual([200, '"default";r=1;t=60']);

        await access.deny('origin:https://evil.example');
        const page = await app.send({
          path: '/limited',
          headers: { origin: 'https://EVIL.example:443' },
        });
        expect([page.status, page.text]).toEqual([403, denied('')]);
        const other = await app.send({
          path: '/limited',
          headers: { origin: 'https://ok.example' },
        });
        expect([other.status, other.headers.ratelimit]).toEqual([200, '"default";r=0;t=60']);
        expect(await left()).toBe(0);
      } finally {
        await app.close();
        await limiter.close();
      }
    });

    it('rateLimit: a rule with an end sends Retry-After and is retryable', async () => {
      const access = await list();
      const app = await fw.build({ rateLimit: { limit: 5, access } });
      try {
        await access.deny('127.0.0.1', { reason: 'cool off', ms: 30_000 });
        const r = await app.send({ path: '/limited' });
        expect([r.status, r.headers['retry-after']]).toEqual([403, '30']);
        const body = JSON.parse(r.text) as Record<string, unknown>;
        expect(body).toMatchObject({
          code: 'ACCESS_DENIED',
          message: 'access denied: cool off',
          retryable: true,
          details: { reason: 'cool off' },
        });
        expect(body.retryAfterMs).toBeGreaterThan(29_000);
        expect(body.retryAfterMs).toBeLessThanOrEqual(30_000);
      } finally {
        await app.close();
      }
    });

    it('concurrency: a deny is 403 and takes no slot; an allow takes none either', async () => {
      const access = await list();
      const app = await fw.build({ concurrency: { max: 1, access, store: storeKind.make() } });
      try {
        await access.deny('127.0.0.1', { reason: 'no' });
        const r = await app.send({ path: '/busy' });
        expect([r.status, r.text]).toEqual([403, denied('no')]);
        await access.allow('127.0.0.1');
        const ok = await app.send({ path: '/busy' });
        expect(ok.status).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('authGuard: a deny is 403 before verify; an allowed client is still locked out', async () => {
      const access = await list();
      const verify = vi.fn((req: AnyRequest) =>
        req.headers.authorization === 'Bearer right' ? ('ok' as const) : ('invalid' as const),
      );
      const app = await fw.build({
        auth: {
          verify,
          access,
          maxAttempts: 2,
          windowMs: 60_000,
          lockoutMs: 60_000,
          exemptLoopback: false,
        },
      });
      const login = (token: string) =>
        app.send({ method: 'POST', path: '/auth', headers: { authorization: `Bearer ${token}` } });
      try {
        await access.deny('127.0.0.1', { reason: 'stolen device' });
        const r = await login('right');
        expect([r.status, r.text]).toEqual([403, denied('stolen device')]);
        expect(verify).not.toHaveBeenCalled();

        await access.allow('127.0.0.1');
        expect((await login('wrong')).status).toBe(401);
        expect((await login('wrong')).status).toBe(401);
        const locked = await login('right');
        expect(locked.status).toBe(429);
        expect(JSON.parse(locked.text).details.code).toBe('AUTH_RATE_LIMITED');
      } finally {
        await app.close();
      }
    });
  });
});

describe('access lists shared through Redis', () => {
  it('a rule set by one process is enforced by another at once, through subscribe', async () => {
    const prefix = uniquePrefix('access-share');
    prefixes.push(prefix);
    const subA = await subscriber();
    const subB = await subscriber();
    const a = new RedisStore({ sendCommand: redis.sendCommand, prefix, subscribe: subA.subscribe });
    const b = new RedisStore({ sendCommand: redis.sendCommand, prefix, subscribe: subB.subscribe });
    // A refresh far away: only the message can bring the change in time.
    const listA = createAccessList({ store: a, refreshMs: 3_600_000 });
    const listB = createAccessList({ store: b, refreshMs: 3_600_000 });
    try {
      await Promise.all([listA.ready(), listB.ready(), subA.ready(), subB.ready()]);
      expect(listB.check({ ip: '198.51.100.7' })).toBe(undefined);
      await listA.deny('198.51.100.0/24', { reason: 'scraper' });
      await vi.waitFor(() => expect(listB.check({ ip: '198.51.100.7' })?.reason).toBe('scraper'), {
        interval: 2,
        timeout: 2000,
      });
      await listA.remove('198.51.100.0/24');
      await vi.waitFor(() => expect(listB.check({ ip: '198.51.100.7' })).toBe(undefined), {
        interval: 2,
        timeout: 2000,
      });
      // Both read the same rules from Redis, in the same order.
      await listB.allow('account:ops');
      expect(await listA.rules()).toEqual(await listB.rules());
    } finally {
      await listA.close();
      await listB.close();
      a.close();
      b.close();
    }
  });

  it('a full list refuses a new subject across processes, atomically', async () => {
    const prefix = uniquePrefix('access-full');
    prefixes.push(prefix);
    const stores = [0, 1, 2, 3].map(
      () => new RedisStore({ sendCommand: redis.sendCommand, prefix }),
    );
    const lists = stores.map((store) => createAccessList({ store, maxRules: 3 }));
    try {
      const settled = await Promise.allSettled(
        lists.flatMap((l, i) => [l.deny(`10.0.${i}.1`), l.deny(`10.0.${i}.2`)]),
      );
      expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(3);
      expect(
        settled
          .filter((s): s is PromiseRejectedResult => s.status === 'rejected')
          .map((s) => (s.reason as { code: string }).code),
      ).toEqual(Array(5).fill('ERR_PORTCULLIS_MAX_RULES'));
      expect(await lists[0]?.rules()).toHaveLength(3);
    } finally {
      for (const l of lists) await l.close();
      for (const s of stores) s.close();
    }
  });
});
