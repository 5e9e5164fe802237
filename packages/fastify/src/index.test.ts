import { createWindowLimiter, PortcullisConfigError } from '@portcullis/core';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import portcullis, {
  authGuard,
  type OnLimited,
  portcullis as named,
  rateLimit,
  webhookGuard,
} from './index.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

function newApp(): FastifyInstance {
  const app = Fastify();
  apps.push(app);
  return app;
}

async function statuses(
  app: FastifyInstance,
  url: string,
  n: number,
  method: 'GET' | 'HEAD' = 'GET',
) {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await app.inject({ method, url })).statusCode);
  return out;
}

describe('the plugin', () => {
  let clock: ManualClock;
  const limits = (limit: number) => {
    clock = manualClock(0);
    return { limit, clock, timers: clock };
  };

  it('is the default export and the named `portcullis`, wrapped by fastify-plugin', () => {
    expect(portcullis).toBe(named);
    expect((portcullis as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')]).toBe(
      true,
    );
    expect(
      (portcullis as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')],
    ).toBe('@portcullis/fastify');
  });

  it('limits every route registered after it, one bucket per client across routes', async () => {
    const app = newApp();
    await app.register(portcullis, limits(3));
    app.get('/a', async () => 'a');
    app.get('/b', async () => 'b');
    expect(await statuses(app, '/a', 2)).toEqual([200, 200]);
    expect(await statuses(app, '/b', 2)).toEqual([200, 429]);
  });

  it('merges a route’s config.rateLimit over the global options, with its own bucket', async () => {
    const app = newApp();
    await app.register(portcullis, { ...limits(5), headers: 'legacy' });
    app.get('/strict', { config: { rateLimit: { limit: 2, name: 'strict' } } }, async () => 'x');
    app.get('/loose', async () => 'y');
    const first = await app.inject('/strict');
    expect(first.headers['ratelimit-policy']).toBe('"strict";q=2;w=60');
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    expect(await statuses(app, '/strict', 2)).toEqual([200, 429]);
    expect(await statuses(app, '/loose', 5)).toEqual([200, 200, 200, 200, 200]);
  });

  it('runs in the hook it is told to, after authentication, keyed by the user', async () => {
    const app = newApp();
    // An authentication hook the app adds for every route: it runs before the limiter's preHandler.
    app.decorateRequest('user', undefined);
    app.addHook('preHandler', async (request) => {
      (request as unknown as { user?: string }).user = String(request.headers['x-user'] ?? '');
    });
    await app.register(portcullis, {
      ...limits(2),
      hook: 'preHandler',
      key: (request, ip) => (request as unknown as { user?: string }).user || ip,
    });
    app.get('/me', async () => 'me');
    app.post(
      '/upload',
      { config: { rateLimit: { limit: 1, name: 'upload', hook: 'preParsing' } } },
      async () => 'ok',
    );
    const as = (user: string) => app.inject({ url: '/me', headers: { 'x-user': user } });
    expect([(await as('alice')).statusCode, (await as('alice')).statusCode]).toEqual([200, 200]);
    expect((await as('alice')).statusCode).toBe(429);
    expect((await as('bob')).statusCode).toBe(200);
    const upload = () => app.inject({ method: 'POST', url: '/upload', payload: { a: 1 } });
    expect([(await upload()).statusCode, (await upload()).statusCode]).toEqual([200, 429]);
  });

  it('refuses an unknown hook name, globally and per route', async () => {
    const app = newApp();
    await expect(app.register(portcullis, { hook: 'onSend' as never })).rejects.toMatchObject({
      code: 'ERR_PORTCULLIS_HOOK',
    });
    const other = newApp();
    await other.register(portcullis);
    expect(() =>
      other.get('/x', { config: { rateLimit: { hook: 'onResponse' as never } } }, async () => 'x'),
    ).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_HOOK' }));
  });

  it('leaves a route with config.rateLimit: false alone', async () => {
    const app = newApp();
    await app.register(portcullis, limits(1));
    app.get('/free', { config: { rateLimit: false } }, async (request) => ({
      decision: request.rateLimit ?? null,
    }));
    for (let i = 0; i < 3; i++) {
      const reply = await app.inject('/free');
      expect(reply.statusCode).toBe(200);
      expect(reply.headers.ratelimit).toBeUndefined();
      expect(reply.json()).toEqual({ decision: null });
    }
  });

  it('global: false limits only the routes with a config.rateLimit object', async () => {
    const app = newApp();
    await app.register(portcullis, { ...limits(1), global: false });
    app.get('/open', async () => 'o');
    app.get('/limited', { config: { rateLimit: {} } }, async () => 'l');
    expect(await statuses(app, '/open', 3)).toEqual([200, 200, 200]);
    expect(await statuses(app, '/limited', 2)).toEqual([200, 429]);
  });

  it('shares a route’s bucket between GET and its automatic HEAD', async () => {
    const app = newApp();
    await app.register(portcullis, limits(5));
    app.get('/doc', { config: { rateLimit: { limit: 2 } } }, async () => 'doc');
    expect(await statuses(app, '/doc', 1, 'HEAD')).toEqual([200]);
    expect(await statuses(app, '/doc', 2)).toEqual([200, 429]);
  });

  describe('request.chargeRateLimit(units)', () => {
    const charging = async (request: FastifyRequest) => ({
      charged: await request.chargeRateLimit(Number(request.headers['x-charge'])),
    });
    const remaining = (r: { headers: Record<string, unknown> }) => r.headers['ratelimit'];

    it("spends in the budget of the route's own limit, global or per route", async () => {
      const app = newApp();
      await app.register(portcullis, limits(10));
      app.get('/shared', charging);
      app.get('/own', { config: { rateLimit: { limit: 5, name: 'own' } } }, charging);
      const shared = await app.inject({ url: '/shared', headers: { 'x-charge': '4' } });
      expect([shared.statusCode, shared.json(), remaining(shared)]).toEqual([
        200,
        { charged: 4 },
        '"default";r=9;t=60',
      ]);
      // 5 of the shared 10 spent; the route's own budget is untouched by them.
      const own = await app.inject({ url: '/own', headers: { 'x-charge': '9' } });
      expect([own.json(), remaining(own)]).toEqual([{ charged: 4 }, '"own";r=4;t=60']);
      expect((await app.inject({ url: '/own', headers: { 'x-charge': '0' } })).statusCode).toBe(
        429,
      );
      const again = await app.inject({ url: '/shared', headers: { 'x-charge': '0' } });
      expect([again.statusCode, remaining(again)]).toEqual([200, '"default";r=4;t=60']);
    });

    it('charges a GET route and its automatic HEAD in their one budget', async () => {
      const app = newApp();
      await app.register(portcullis, limits(10));
      app.get('/doc', { config: { rateLimit: { limit: 6 } } }, async (request, reply) => {
        await request.chargeRateLimit(2);
        return reply.send('doc');
      });
      expect(await statuses(app, '/doc', 1, 'HEAD')).toEqual([200]);
      expect(await statuses(app, '/doc', 2)).toEqual([200, 429]);
    });

    it('spends in both limits when the plugin is registered again in a child context', async () => {
      const app = newApp();
      await app.register(portcullis, limits(10));
      await app.register(async (child) => {
        await child.register(portcullis, { limit: 4, clock, timers: clock, name: 'inner' });
        child.get('/both', charging);
      });
      // 1 + 9 asked: the inner limit had 3 left, the outer 9: it resolves to the fewer.
      const r = await app.inject({ url: '/both', headers: { 'x-charge': '9' } });
      expect([r.statusCode, r.json()]).toEqual([200, { charged: 3 }]);
      expect((await app.inject({ url: '/both', headers: { 'x-charge': '0' } })).statusCode).toBe(
        429,
      );
    });

    it('rejects ERR_PORTCULLIS_NOT_LIMITED on a route the plugin does not limit', async () => {
      const app = newApp();
      await app.register(portcullis, { ...limits(5), global: false });
      const handler = async (request: { chargeRateLimit(n: number): Promise<number> }) =>
        request.chargeRateLimit(1).then(
          (n) => ({ charged: n }),
          (e: Error & { code?: string }) => ({ code: e.code, message: e.message }),
        );
      app.get('/open', handler);
      app.get('/off', { config: { rateLimit: false } }, handler);
      expect((await app.inject('/open')).json()).toEqual({
        code: 'ERR_PORTCULLIS_NOT_LIMITED',
        message:
          'portcullis: request.chargeRateLimit() on GET /open, a route the plugin does not limit',
      });
      expect((await app.inject('/off')).json()).toMatchObject({
        code: 'ERR_PORTCULLIS_NOT_LIMITED',
      });
    });

    it('rejects units that are not a non-negative integer, spending nothing', async () => {
      const app = newApp();
      await app.register(portcullis, limits(10));
      app.get('/x', async (request) =>
        request
          .chargeRateLimit(Number(request.headers['x-charge']))
          .catch((e: Error & { code?: string }) => ({ code: e.code })),
      );
      for (const bad of ['-1', '2.5', 'NaN'])
        expect((await app.inject({ url: '/x', headers: { 'x-charge': bad } })).json()).toEqual({
          code: 'ERR_PORTCULLIS_COST',
        });
      expect(remaining(await app.inject({ url: '/x', headers: { 'x-charge': '0' } }))).toBe(
        '"default";r=6;t=60',
      );
    });
  });

  it('config.concurrency: at most max of the route in flight per client, GET and HEAD together', async () => {
    const app = newApp();
    await app.register(portcullis, { global: false });
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let started = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    app.get('/export', { config: { concurrency: { max: 1 } } }, async () => {
      started();
      await gate;
      return 'done';
    });
    app.get('/other', async () => 'free');
    const first = app.inject({ url: '/export' });
    await running;
    const refused = await app.inject({ url: '/export' });
    expect([refused.statusCode, refused.headers['retry-after'], refused.json()]).toEqual([
      429,
      '1',
      {
        code: 'RATE_LIMITED',
        message: 'too many requests; retry after 1s',
        retryable: true,
        retryAfterMs: 1000,
      },
    ]);
    expect((await app.inject({ method: 'HEAD', url: '/export' })).statusCode).toBe(429);
    expect((await app.inject({ url: '/other' })).statusCode).toBe(200);
    open();
    expect((await first).statusCode).toBe(200);
    expect((await app.inject({ url: '/export' })).statusCode).toBe(200);
  });

  it('config.concurrency that is not options fails the route, as does a wrong option', async () => {
    const app = newApp();
    await app.register(portcullis);
    expect(() => app.get('/x', { config: { concurrency: 2 as never } }, async () => 'x')).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_CONCURRENCY' }),
    );
    expect(() => app.get('/y', { config: { concurrency: { max: 0 } } }, async () => 'y')).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_MAX' }),
    );
  });

  it('stays inside the encapsulated context it is registered in', async () => {
    const app = newApp();
    await app.register(async (child) => {
      await child.register(portcullis, limits(1));
      child.get('/inside', async () => 'in');
    });
    await app.register(async (sibling) => {
      sibling.get('/sibling', async () => 'sib');
    });
    app.get('/outside', async () => 'out');
    expect(await statuses(app, '/inside', 2)).toEqual([200, 429]);
    expect(await statuses(app, '/sibling', 3)).toEqual([200, 200, 200]);
    expect(await statuses(app, '/outside', 3)).toEqual([200, 200, 200]);
  });

  it('registers again in a child context without redeclaring the decorator', async () => {
    const app = newApp();
    await app.register(portcullis, limits(5));
    await app.register(async (child) => {
      await child.register(portcullis, { limit: 1, clock, timers: clock, name: 'inner' });
      child.get('/both', async () => 'x');
    });
    // both limits apply: the inner one (checked first) refuses the second request
    expect(await statuses(app, '/both', 2)).toEqual([200, 429]);
  });

  it('ignores Fastify’s own register options (prefix)', async () => {
    const app = newApp();
    await app.register(portcullis, { ...limits(1), prefix: '/api' } as never);
    app.get('/x', async () => 'x');
    expect(await statuses(app, '/x', 2)).toEqual([200, 429]);
  });

  it('keys by the socket peer, never by request.ip (trustProxy ignored)', async () => {
    const app = Fastify({ trustProxy: true });
    apps.push(app);
    await app.register(portcullis, limits(5));
    app.get('/', async (request) => ({ ip: request.ip, key: request.rateLimit?.key }));
    const reply = await app.inject({
      url: '/',
      remoteAddress: '2001:db8:5:6::7',
      headers: { 'x-forwarded-for': '203.0.113.9' },
    });
    expect(reply.json()).toEqual({ ip: '203.0.113.9', key: '2001:db8:5:6::/64' });
  });

  it('calls onLimited(request, reply, decision) with the counter headers set', async () => {
    const app = newApp();
    const onLimited = vi.fn<OnLimited>(async (request, reply, decision) => {
      await reply.code(503).send({ mine: true, same: request.rateLimit === decision });
    });
    await app.register(portcullis, { ...limits(1), onLimited });
    app.get('/', async () => 'ok');
    await app.inject('/');
    const refused = await app.inject('/');
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toEqual({ mine: true, same: true });
    expect(refused.headers['retry-after']).toBe('60');
    expect(onLimited).toHaveBeenCalledTimes(1);
  });

  it('stops its stores’ sweep timers when the app closes', async () => {
    const app = newApp();
    await app.register(portcullis, limits(5));
    app.get('/', { config: { rateLimit: { limit: 2 } } }, async () => 'ok');
    app.get('/g', async () => 'ok');
    await app.inject('/');
    await app.inject('/g');
    expect(clock.pendingTimers()).toBe(2);
    await app.close();
    expect(clock.pendingTimers()).toBe(0);
  });

  it.each([
    ['a bad global option', { limit: -1 }, 'ERR_PORTCULLIS_LIMIT'],
    ['an unknown global option', { max: 5 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
    ['global not a boolean', { global: 'yes' }, 'ERR_PORTCULLIS_GLOBAL'],
  ])('fails registration for %s', async (_label, options, code) => {
    const app = newApp();
    await expect(app.register(portcullis, options as never)).rejects.toMatchObject({ code });
  });

  it.each([
    ['true', true, 'ERR_PORTCULLIS_RATE_LIMIT'],
    ['a bad option', { windowMs: 0 }, 'ERR_PORTCULLIS_WINDOW_MS'],
    [
      'a limiter clashing with the global limit',
      { limiter: createWindowLimiter() },
      'ERR_PORTCULLIS_LIMITER',
    ],
  ])('fails the route for config.rateLimit %s', async (_label, config, code) => {
    const app = newApp();
    await app.register(portcullis, { limit: 5 });
    let error: unknown;
    try {
      app.get('/', { config: { rateLimit: config as never } }, async () => 'x');
      await app.ready();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PortcullisConfigError);
    expect(error).toMatchObject({ code });
  });
});

describe('the hooks', () => {
  it('rateLimit works as an app-wide onRequest hook, 404s included', async () => {
    const clock = manualClock(0);
    const app = newApp();
    app.addHook('onRequest', rateLimit({ limit: 2, clock, timers: clock }));
    app.get('/', async () => 'ok');
    expect(await statuses(app, '/', 1)).toEqual([200]);
    expect(await statuses(app, '/missing', 2)).toEqual([404, 429]);
  });

  it('rateLimit works as a not-found preHandler', async () => {
    const clock = manualClock(0);
    const app = newApp();
    app.setNotFoundHandler(
      { preHandler: rateLimit({ limit: 1, clock, timers: clock }) },
      async (_request, reply) => reply.code(404).send('nothing here'),
    );
    expect(await statuses(app, '/missing', 2)).toEqual([404, 429]);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('verify broke');
      },
    ],
    ['rejects', () => Promise.reject(new Error('verify broke'))],
  ])('hands a verify that %s to the error handler', async (_how, verify) => {
    const app = newApp();
    app.post('/auth', { onRequest: authGuard({ verify }) }, async () => 'in');
    app.post('/hook', { onRequest: webhookGuard({ verify }) }, async () => 'in');
    for (const url of ['/auth', '/hook']) {
      const reply = await app.inject({ method: 'POST', url });
      expect(reply.statusCode).toBe(500);
      expect(reply.json()).toMatchObject({ message: 'verify broke' });
    }
  });

  it('hands the Fastify request to verify', async () => {
    const app = newApp();
    const verify = vi.fn((request: { body?: unknown; headers: Record<string, unknown> }) =>
      request.headers['x-token'] === 't' ? ('ok' as const) : ('invalid' as const),
    );
    app.get('/', { onRequest: authGuard({ verify }) }, async () => 'in');
    expect((await app.inject({ url: '/', headers: { 'x-token': 't' } })).statusCode).toBe(200);
    expect(verify.mock.calls[0]?.[0]).toHaveProperty('raw');
  });

  it('stays synchronous with the memory store: done() runs before the hook returns', () => {
    const request = { raw: { socket: { remoteAddress: '203.0.113.1' }, headers: {} } };
    const reply = { header: vi.fn() };
    const done = vi.fn();
    const app = newApp();
    rateLimit({ limit: 5 }).call(app, request as never, reply as never, done);
    expect(done).toHaveBeenCalledTimes(1);
    expect(reply.header.mock.calls).toEqual([
      ['RateLimit-Policy', '"default";q=5;w=60'],
      ['RateLimit', '"default";r=4;t=60'],
    ]);
    authGuard({ verify: () => 'ok' }).call(app, request as never, reply as never, done);
    webhookGuard({ verify: () => 'ok' }).call(app, request as never, reply as never, done);
    expect(done).toHaveBeenCalledTimes(3);
  });

  it('names its hooks for readable stack traces', () => {
    const verify = () => 'ok' as const;
    expect([rateLimit().name, authGuard({ verify }).name, webhookGuard({ verify }).name]).toEqual([
      'portcullisRateLimit',
      'portcullisAuthGuard',
      'portcullisWebhookGuard',
    ]);
  });
});
