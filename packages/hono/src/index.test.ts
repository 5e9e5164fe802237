import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { type Decision, PortcullisConfigError } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { Hono, type MiddlewareHandler } from 'hono';
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { authGuard, rateLimit, webhookGuard } from './index.js';

const T0 = 1_000_000;
const logger = () => ({ warn: vi.fn(), error: vi.fn() });

/** An app whose route answers with the decision `rateLimit` left in the context. */
function app(...middleware: MiddlewareHandler[]) {
  const a = new Hono();
  a.onError((error, c) => c.json({ error: error.message }, 500));
  for (const mw of middleware) a.use('*', mw);
  a.get('/', (c) => {
    const decision = c.get('rateLimit');
    expectTypeOf(decision).toEqualTypeOf<Decision | undefined>();
    const status = Number(c.req.header('x-status') ?? 200);
    if (status >= 500) throw new Error('boom');
    return c.json({ decision: decision ?? null }, status as 200);
  });
  a.get('/raw', () => new Response('raw', { status: 201 }));
  return a;
}

let servers: ServerType[] = [];
afterEach(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  servers = [];
});

async function listen(a: Hono): Promise<string> {
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: a.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('@portcullis/hono rateLimit', () => {
  it('on @hono/node-server keys by the socket and sets c.get("rateLimit")', async () => {
    const clock = manualClock(T0);
    const url = await listen(app(rateLimit({ limit: 2, clock, timers: clock })));
    const first = await fetch(url);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"default";q=2;w=60');
    expect(first.headers.get('ratelimit')).toBe('"default";r=1;t=60');
    expect(await first.json()).toEqual({
      decision: {
        allowed: true,
        reason: 'allowed',
        limit: 2,
        remaining: 1,
        retryAfterMs: 0,
        resetMs: 60_000,
        key: '127.0.0.1',
      },
    });
    await fetch(url);
    const refused = await fetch(url);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(await refused.text()).toBe(
      '{"code":"RATE_LIMITED","message":"too many requests; retry after 60s","retryable":true,"retryAfterMs":60000}',
    );
  });

  it('elsewhere, without clientAddress, shares the unknown bucket and warns once', async () => {
    const clock = manualClock(T0);
    const log = logger();
    const a = app(rateLimit({ limit: 2, clock, timers: clock, logger: log }));
    const keys = [];
    for (let i = 0; i < 2; i++)
      keys.push(((await (await a.request('/')).json()) as { decision: Decision }).decision.key);
    expect(keys).toEqual(['unknown', 'unknown']);
    expect((await a.request('/')).status).toBe(429);
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(log.warn).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_NO_CLIENT_ADDRESS' },
      expect.stringContaining('rateLimit could not learn the client address'),
    );
  });

  it('clientAddress(c) names the peer; X-Forwarded-For counts only from trustedProxies', async () => {
    const clock = manualClock(T0);
    const keyOf = async (a: Hono, headers: Record<string, string>) =>
      ((await (await a.request('/', { headers })).json()) as { decision: Decision }).decision.key;
    const untrusted = app(
      rateLimit({ clock, timers: clock, clientAddress: (c) => c.req.header('x-peer') }),
    );
    expect(await keyOf(untrusted, { 'x-peer': '203.0.113.9', 'x-forwarded-for': '1.2.3.4' })).toBe(
      '203.0.113.9',
    );
    const trusted = app(
      rateLimit({
        clock,
        timers: clock,
        trustedProxies: ['10.0.0.0/8'],
        clientAddress: (c) => c.req.header('x-peer'),
      }),
    );
    const behind = { 'x-peer': '10.0.0.2', 'x-forwarded-for': '1.2.3.4, 198.51.100.7' };
    expect(await keyOf(trusted, behind)).toBe('198.51.100.7');
    expect(await keyOf(trusted, { 'x-peer': '10.0.0.2' })).toBe('unknown');
  });

  it('adds the counter headers to a Response the handler built itself', async () => {
    const clock = manualClock(T0);
    const a = app(rateLimit({ limit: 5, clock, timers: clock, clientAddress: () => '192.0.2.1' }));
    const reply = await a.request('/raw');
    expect(reply.status).toBe(201);
    expect(await reply.text()).toBe('raw');
    expect(reply.headers.get('ratelimit')).toBe('"default";r=4;t=60');
  });

  it('stacked limiters on one request advertise both policies (one RawRequest per request)', async () => {
    const clock = manualClock(T0);
    const peer = { clock, timers: clock, clientAddress: () => '192.0.2.1' };
    const a = app(
      rateLimit({ name: 'burst', limit: 5, windowMs: 1_000, ...peer }),
      rateLimit({ name: 'daily', limit: 100, windowMs: 86_400_000, ...peer }),
    );
    const reply = await a.request('/');
    expect(reply.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=1, "daily";q=100;w=86400');
    expect(reply.headers.get('ratelimit')).toBe('"burst";r=4;t=1, "daily";r=99;t=86400');
  });

  it('refunds from the final Response: a thrown handler (onError 500) counts as failed', async () => {
    const clock = manualClock(T0);
    const a = app(
      rateLimit({
        limit: 1,
        skipFailedRequests: true,
        clock,
        timers: clock,
        clientAddress: () => '192.0.2.1',
      }),
    );
    for (let i = 0; i < 3; i++) {
      const failed = await a.request('/', { headers: { 'x-status': '500' } });
      expect(failed.status).toBe(500);
      expect(await failed.json()).toEqual({ error: 'boom' });
    }
    expect((await a.request('/')).status).toBe(200);
    expect((await a.request('/')).status).toBe(429);
  });

  it('requestWasSuccessful receives the context and the final Response', async () => {
    const clock = manualClock(T0);
    const seen: number[] = [];
    const a = app(
      rateLimit({
        limit: 1,
        skipSuccessfulRequests: true,
        requestWasSuccessful: (c, res) => {
          seen.push(res.status, c.res.status);
          return res.status < 300;
        },
        clock,
        timers: clock,
        clientAddress: () => '192.0.2.1',
      }),
    );
    expect((await a.request('/', { headers: { 'x-status': '204' } })).status).toBe(204);
    expect((await a.request('/', { headers: { 'x-status': '404' } })).status).toBe(404);
    expect((await a.request('/')).status).toBe(429);
    expect(seen).toEqual([204, 204, 404, 404]);
  });

  it('a client that leaves while the handler runs (request.signal aborts) counts as failed', async () => {
    const clock = manualClock(T0);
    const a = new Hono();
    let release: () => void = () => {};
    a.get(
      '/',
      rateLimit({
        limit: 1,
        skipFailedRequests: true,
        clock,
        timers: clock,
        clientAddress: () => '192.0.2.1',
      }),
      async (c) => {
        if (c.req.header('x-hang') !== undefined)
          await new Promise<void>((resolve) => {
            release = resolve;
          });
        return c.text('ok');
      },
    );
    const controller = new AbortController();
    const pending = a.request(
      new Request('http://x/', { headers: { 'x-hang': '1' }, signal: controller.signal }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    release();
    expect((await pending).status).toBe(200);
    expect((await a.request('/')).status).toBe(200);
    expect((await a.request('/')).status).toBe(429);
  });

  it('onLimited(c, decision) answers, with the counter headers already on c', async () => {
    const clock = manualClock(T0);
    const a = app(
      rateLimit({
        limit: 1,
        clock,
        timers: clock,
        clientAddress: () => '192.0.2.1',
        onLimited: (c, decision) => c.json({ mine: decision.reason }, 503),
      }),
    );
    await a.request('/');
    const reply = await a.request('/');
    expect(reply.status).toBe(503);
    expect(await reply.json()).toEqual({ mine: 'limited' });
    expect(reply.headers.get('retry-after')).toBe('60');
    expect(reply.headers.get('ratelimit')).toBe('"default";r=0;t=60');
  });

  it('reconfigure and limiter hang on the middleware', async () => {
    const clock = manualClock(T0);
    const mw = rateLimit({ limit: 1, clock, timers: clock, clientAddress: () => '192.0.2.1' });
    const a = app(mw);
    await a.request('/');
    expect((await a.request('/')).status).toBe(429);
    mw.reconfigure({ limit: 3 });
    // The refused request was free: 2 of 3 spent.
    expect((await a.request('/')).headers.get('ratelimit')).toBe('"default";r=1;t=60');
    expect(mw.limiter.rule.limit).toBe(3);
  });

  it('mounted uncalled, it answers with ERR_PORTCULLIS_FACTORY_NOT_CALLED', async () => {
    const a = new Hono();
    a.onError((error, c) => c.json({ code: (error as PortcullisConfigError).code }, 500));
    a.get('/', rateLimit as unknown as MiddlewareHandler, (c) => c.text('unreachable'));
    const reply = await a.request('/');
    expect(reply.status).toBe(500);
    expect(await reply.json()).toEqual({ code: 'ERR_PORTCULLIS_FACTORY_NOT_CALLED' });
  });

  it.each([
    ['rateLimit', () => rateLimit({ clientAddress: '127.0.0.1' as never })],
    ['authGuard', () => authGuard({ verify: () => 'ok', clientAddress: 1 as never })],
    ['webhookGuard', () => webhookGuard({ verify: () => 'ok', clientAddress: true as never })],
  ])('%s: clientAddress must be a function', (_name, build) => {
    expect(build).toThrow(PortcullisConfigError);
    expect(build).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_CLIENT_ADDRESS' }));
  });
});

describe('@portcullis/hono authGuard and webhookGuard', () => {
  const verify = (c: { req: { header(name: string): string | undefined } }) => {
    const token = c.req.header('authorization');
    return token === undefined ? 'missing' : token === 'Bearer right' ? 'ok' : 'invalid';
  };

  it('a repeated Origin over @hono/node-server shares browser-origin:invalid', async () => {
    const clock = manualClock(T0);
    const guard = authGuard({ verify, maxAttempts: 2, clock, timers: clock });
    const a = new Hono();
    a.post('/login', guard, (c) => c.json({ ok: true }));
    const url = await listen(a);
    const attempt = (...origins: string[]) => {
      const headers = new Headers({ authorization: 'Bearer wrong' });
      for (const o of origins) headers.append('origin', o);
      return fetch(`${url}/login`, { method: 'POST', headers });
    };
    expect((await attempt('http://a.test', 'http://b.test')).status).toBe(401);
    expect((await attempt('http://c.test', 'http://d.test')).status).toBe(401);
    // A third pair of other origins is in the same (now locked) bucket; one origin has its own.
    expect((await attempt('http://e.test', 'http://f.test')).status).toBe(429);
    expect((await attempt('http://e.test')).status).toBe(401);
  });

  it('the same through clientAddress, where Fetch joined the header with ", "', async () => {
    const clock = manualClock(T0);
    const guard = authGuard({
      verify,
      maxAttempts: 2,
      clock,
      timers: clock,
      clientAddress: () => '127.0.0.1',
    });
    const a = new Hono();
    a.post('/login', guard, (c) => c.json({ ok: true }));
    const attempt = (origin: string) =>
      a.request('/login', { method: 'POST', headers: { authorization: 'Bearer wrong', origin } });
    expect((await attempt('http://a.test, http://b.test')).status).toBe(401);
    expect((await attempt('http://c.test, http://d.test')).status).toBe(401);
    const locked = await attempt('http://e.test, http://f.test');
    expect(locked.status).toBe(429);
    expect(await locked.json()).toMatchObject({ details: { code: 'AUTH_RATE_LIMITED' } });
    expect((await attempt('http://e.test')).status).toBe(401);
  });

  it('webhookGuard: 401 then a plain 429 with Retry-After; a right token passes', async () => {
    const clock = manualClock(T0);
    const hook = webhookGuard({
      verify,
      maxAttempts: 1,
      clock,
      timers: clock,
      clientAddress: () => '198.51.100.4',
    });
    const a = new Hono();
    a.post('/hook', hook, (c) => c.text('ok'));
    const send = (authorization: string) =>
      a.request('/hook', { method: 'POST', headers: { authorization } });
    const first = await send('Bearer wrong');
    expect([first.status, await first.text()]).toEqual([401, 'Unauthorized']);
    const locked = await send('Bearer wrong');
    expect([locked.status, await locked.text(), locked.headers.get('retry-after')]).toEqual([
      429,
      'Too Many Requests',
      '60',
    ]);
    expect(locked.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const right = await send('Bearer right');
    expect([right.status, await right.text()]).toEqual([200, 'ok']);
  });
});
