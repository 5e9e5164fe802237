import { PortcullisConfigError } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { authGuard, decisionOf, rateLimit, webhookGuard } from './index.js';

const T0 = 1_000_000;

/** What a runtime hands a handler beside the request (Bun's server, Deno's info): here, the peer. */
interface Info {
  readonly remoteAddress: string | undefined;
}
const peer = (_request: Request, info: Info) => info.remoteAddress;
const from = (remoteAddress: string | undefined): Info => ({ remoteAddress });
const get = (headers: Record<string, string> = {}) => new Request('http://api.test/', { headers });

const echo = (request: Request) =>
  Response.json(
    { decision: decisionOf(request) ?? null },
    {
      status: Number(request.headers.get('x-status') ?? 200),
    },
  );

describe('@portcullis/fetch rateLimit', () => {
  it('wraps a handler: counter headers on its Response, the decision through decisionOf', async () => {
    const clock = manualClock(T0);
    const handler = rateLimit({ limit: 2, clock, timers: clock, clientAddress: peer })(echo);
    const first = await handler(get(), from('203.0.113.7'));
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
        key: '203.0.113.7',
      },
    });
    await handler(get(), from('203.0.113.7'));
    const refused = await handler(get(), from('203.0.113.7'));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await refused.text()).toBe(
      '{"code":"RATE_LIMITED","message":"too many requests; retry after 60s","retryable":true,"retryAfterMs":60000}',
    );
    expect((await handler(get(), from('198.51.100.1'))).status).toBe(200);
  });

  it("keeps the handler's parameters (the runtime's extra arguments typed from clientAddress)", () => {
    const wrapped = rateLimit({ clientAddress: peer })((_request: Request, info: Info) =>
      Response.json(info.remoteAddress),
    );
    expectTypeOf(wrapped).parameters.toEqualTypeOf<[Request, Info]>();
    expectTypeOf(wrapped).returns.toEqualTypeOf<Promise<Response>>();
  });

  it('passes the extra arguments to clientAddress and the handler', async () => {
    const seen: unknown[] = [];
    const server = { requestIP: (_req: Request) => ({ address: '192.0.2.8' }) };
    const handler = rateLimit({
      clientAddress: (request: Request, s: typeof server, extra: string) => {
        seen.push(extra);
        return s.requestIP(request).address;
      },
    })((request, s, extra) => {
      seen.push(s === server, extra);
      return Response.json(decisionOf(request)?.key);
    });
    const reply = await handler(get(), server, 'third');
    expect(await reply.json()).toBe('192.0.2.8');
    expect(seen).toEqual(['third', true, 'third']);
  });

  it('an address the runtime does not have: the unknown bucket, one warning', async () => {
    const clock = manualClock(T0);
    const logger = { warn: vi.fn(), error: vi.fn() };
    const handler = rateLimit({ limit: 1, clock, timers: clock, logger, clientAddress: peer })(
      echo,
    );
    expect(await (await handler(get(), from(undefined))).json()).toMatchObject({
      decision: { key: 'unknown' },
    });
    expect((await handler(get(), from(undefined))).status).toBe(429);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_NO_CLIENT_ADDRESS' },
      expect.stringContaining('clientAddress(request, ...rest) returned no address'),
    );
  });

  it('warnings: { PORTCULLIS_NO_CLIENT_ADDRESS: false } switches that warning off', async () => {
    const logger = { warn: vi.fn(), error: vi.fn() };
    const warnings = { PORTCULLIS_NO_CLIENT_ADDRESS: false } as const;
    const guarded = authGuard({ verify: () => 'ok', logger, warnings, clientAddress: peer })(echo);
    expect(
      (await rateLimit({ logger, warnings, clientAddress: peer })(echo)(get(), from(undefined)))
        .status,
    ).toBe(200);
    expect((await guarded(get(), from(undefined))).status).toBe(200);
    expect(logger.warn).not.toHaveBeenCalled();
  });

  it('X-Forwarded-For counts only from trustedProxies, as everywhere', async () => {
    const clock = manualClock(T0);
    const keyOf = async (h: (r: Request, i: Info) => Promise<Response>, address: string) =>
      (
        (await (
          await h(get({ 'x-forwarded-for': '1.2.3.4, 198.51.100.7' }), from(address))
        ).json()) as {
          decision: { key: string };
        }
      ).decision.key;
    const plain = rateLimit({ clock, timers: clock, clientAddress: peer })(echo);
    expect(await keyOf(plain, '10.0.0.2')).toBe('10.0.0.2');
    const proxied = rateLimit({
      clock,
      timers: clock,
      trustedProxies: ['10.0.0.0/8'],
      clientAddress: peer,
    })(echo);
    expect(await keyOf(proxied, '10.0.0.2')).toBe('198.51.100.7');
  });

  it('stacked wrappers advertise every policy (one RawRequest per Request)', async () => {
    const clock = manualClock(T0);
    const burst = rateLimit({
      name: 'burst',
      limit: 5,
      windowMs: 1_000,
      clock,
      timers: clock,
      clientAddress: peer,
    });
    const daily = rateLimit({
      name: 'daily',
      limit: 100,
      windowMs: 86_400_000,
      clock,
      timers: clock,
      clientAddress: peer,
    });
    const handler = burst(daily(echo));
    const reply = await handler(get(), from('192.0.2.1'));
    expect(reply.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=1, "daily";q=100;w=86400');
    expect(reply.headers.get('ratelimit')).toBe('"burst";r=4;t=1, "daily";r=99;t=86400');
  });

  it('adds its headers to a Response with immutable headers (Response.redirect) by copying it', async () => {
    const handler = rateLimit({ clientAddress: peer })(() =>
      Response.redirect('http://api.test/next', 302),
    );
    const reply = await handler(get(), from('192.0.2.1'));
    expect(reply.status).toBe(302);
    expect(reply.headers.get('location')).toBe('http://api.test/next');
    expect(reply.headers.get('ratelimit')).toBe('"default";r=59;t=60');
  });

  it('outcome counting reads the final Response; a throwing handler counts as failed and rethrows', async () => {
    const clock = manualClock(T0);
    const handler = rateLimit({
      limit: 1,
      skipFailedRequests: true,
      clock,
      timers: clock,
      clientAddress: peer,
    })((request) => {
      if (request.headers.get('x-throw')) throw new Error('boom');
      return echo(request);
    });
    expect((await handler(get({ 'x-status': '503' }), from('192.0.2.1'))).status).toBe(503);
    await expect(handler(get({ 'x-throw': '1' }), from('192.0.2.1'))).rejects.toThrow('boom');
    expect((await handler(get(), from('192.0.2.1'))).status).toBe(200);
    expect((await handler(get(), from('192.0.2.1'))).status).toBe(429);
  });

  it('requestWasSuccessful receives the request and the Response', async () => {
    const clock = manualClock(T0);
    const seen: [boolean, number][] = [];
    const handler = rateLimit({
      limit: 1,
      skipSuccessfulRequests: true,
      requestWasSuccessful: (request, response) => {
        seen.push([request instanceof Request, response.status]);
        return response.status < 300;
      },
      clock,
      timers: clock,
      clientAddress: peer,
    })(echo);
    expect((await handler(get({ 'x-status': '201' }), from('192.0.2.1'))).status).toBe(201);
    expect((await handler(get({ 'x-status': '404' }), from('192.0.2.1'))).status).toBe(404);
    expect((await handler(get(), from('192.0.2.1'))).status).toBe(429);
    expect(seen).toEqual([
      [true, 201],
      [true, 404],
    ]);
  });

  it('a client that leaves first (request.signal aborts) counts as failed', async () => {
    const clock = manualClock(T0);
    let release: () => void = () => {};
    const handler = rateLimit({
      limit: 1,
      skipFailedRequests: true,
      clock,
      timers: clock,
      clientAddress: peer,
    })(async (request) => {
      if (request.headers.get('x-hang'))
        await new Promise<void>((resolve) => {
          release = resolve;
        });
      return new Response('ok');
    });
    const controller = new AbortController();
    const hanging = new Request('http://api.test/', {
      headers: { 'x-hang': '1' },
      signal: controller.signal,
    });
    const pending = handler(hanging, from('192.0.2.1'));
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    release();
    await pending;
    expect((await handler(get(), from('192.0.2.1'))).status).toBe(200);
    expect((await handler(get(), from('192.0.2.1'))).status).toBe(429);
  });

  it('onLimited answers; the counter headers are added to its Response', async () => {
    const clock = manualClock(T0);
    const handler = rateLimit({
      limit: 1,
      clock,
      timers: clock,
      clientAddress: peer,
      onLimited: (_request, decision) => Response.json({ mine: decision.reason }, { status: 503 }),
    })(echo);
    await handler(get(), from('192.0.2.1'));
    const reply = await handler(get(), from('192.0.2.1'));
    expect(reply.status).toBe(503);
    expect(await reply.json()).toEqual({ mine: 'limited' });
    expect(reply.headers.get('retry-after')).toBe('60');
  });
});

describe('@portcullis/fetch configuration', () => {
  const verify = () => 'ok' as const;
  it.each([
    ['rateLimit', () => rateLimit({} as never)],
    ['rateLimit (no options)', () => rateLimit(undefined as never)],
    ['authGuard', () => authGuard({ verify } as never)],
    ['webhookGuard', () => webhookGuard({ verify } as never)],
  ])('%s without clientAddress: ERR_PORTCULLIS_CLIENT_ADDRESS', (_name, build) => {
    expect(build).toThrow(PortcullisConfigError);
    expect(build).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_CLIENT_ADDRESS', option: 'clientAddress' }),
    );
  });

  it('wrapping anything but a handler is a config error', () => {
    const wrap = rateLimit({ clientAddress: peer });
    expect(() => wrap(get() as never)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_HANDLER' }),
    );
  });

  it('used as the handler itself, it says to call it', () => {
    expect(() => (rateLimit as unknown as (r: Request) => unknown)(get())).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_FACTORY_NOT_CALLED' }),
    );
  });
});

describe('@portcullis/fetch authGuard and webhookGuard', () => {
  const verify = (request: Request) => {
    const token = request.headers.get('authorization');
    return token === null ? 'missing' : token === 'Bearer right' ? 'ok' : 'invalid';
  };

  it('a repeated Origin (Headers joins it with ", ") shares browser-origin:invalid', async () => {
    const clock = manualClock(T0);
    const login = authGuard({ verify, maxAttempts: 2, clock, timers: clock, clientAddress: peer })(
      () => Response.json({ ok: true }),
    );
    const attempt = (...origins: string[]) => {
      const headers = new Headers({ authorization: 'Bearer wrong' });
      for (const o of origins) headers.append('origin', o);
      return login(
        new Request('http://api.test/login', { method: 'POST', headers }),
        from('127.0.0.1'),
      );
    };
    expect((await attempt('http://a.test', 'http://b.test')).status).toBe(401);
    expect((await attempt('http://c.test', 'http://d.test')).status).toBe(401);
    const locked = await attempt('http://e.test', 'http://f.test');
    expect(locked.status).toBe(429);
    expect(await locked.json()).toMatchObject({ details: { code: 'AUTH_RATE_LIMITED' } });
    expect((await attempt('http://e.test')).status).toBe(401);
  });

  it('a right credential reaches the handler with the extra arguments', async () => {
    const login = authGuard({ verify, clientAddress: peer })((_request, info: Info) =>
      Response.json({ peer: info.remoteAddress }),
    );
    const reply = await login(
      new Request('http://api.test/login', { headers: { authorization: 'Bearer right' } }),
      from('192.0.2.5'),
    );
    expect(await reply.json()).toEqual({ peer: '192.0.2.5' });
    expect((await login(get(), from('192.0.2.5'))).status).toBe(401);
  });

  it('webhookGuard: 401, then a plain 429 with Retry-After; a right token passes', async () => {
    const clock = manualClock(T0);
    const hook = webhookGuard({
      verify,
      maxAttempts: 1,
      clock,
      timers: clock,
      clientAddress: peer,
    })(() => new Response('ok'));
    const send = (authorization: string) =>
      hook(
        new Request('http://api.test/hook', { method: 'POST', headers: { authorization } }),
        from('198.51.100.4'),
      );
    const first = await send('Bearer wrong');
    expect([first.status, await first.text()]).toEqual([401, 'Unauthorized']);
    const locked = await send('Bearer wrong');
    expect([locked.status, await locked.text(), locked.headers.get('retry-after')]).toEqual([
      429,
      'Too Many Requests',
      '60',
    ]);
    expect((await send('Bearer right')).status).toBe(200);
  });
});
