import { createRequire } from 'node:module';
import type { Decision } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import Koa3, { type Middleware } from 'koa';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { authGuard, type OnLimited, rateLimit, webhookGuard } from './index.js';

// Koa 2 is installed as `koa2` (npm:koa@2); its API is the one the types describe.
const Koa2 = createRequire(import.meta.url)('koa2') as typeof Koa3;

describe.each([
  ['koa 3', Koa3],
  ['koa 2', Koa2],
])('@portcullis/koa on %s', (_name, Koa) => {
  function app(...middleware: Middleware[]) {
    const a = new Koa();
    a.silent = true;
    a.use(async (ctx, next) => {
      try {
        await next();
      } catch (error) {
        ctx.status = 500;
        ctx.body = { error: (error as Error).message };
      }
    });
    for (const mw of middleware) a.use(mw);
    return a.callback();
  }
  const ok: Middleware = (ctx) => {
    ctx.body = { state: ctx.state.rateLimit ?? null };
  };

  it('close() on each middleware stops the timers it built', async () => {
    const clock = manualClock(0);
    const limit = rateLimit({ limit: 5, clock, timers: clock });
    // Not loopback-exempt: the test client connects from 127.0.0.1, and its failures must count.
    const guard = authGuard({
      verify: () => 'invalid',
      exemptLoopback: false,
      clock,
      timers: clock,
    });
    const hook = webhookGuard({ verify: () => 'invalid', clock, timers: clock });
    await request(app(limit, ok)).get('/').expect(200);
    await request(app(guard, ok)).get('/').expect(401);
    await request(app(hook, ok)).get('/').expect(401);
    expect(clock.pendingTimers()).toBe(3);
    await Promise.all([limit.close(), guard.close(), hook.close()]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('exposes the decision on ctx.state.rateLimit', async () => {
    const clock = manualClock(0);
    const reply = await request(app(rateLimit({ limit: 2, clock, timers: clock }), ok)).get('/');
    expect(reply.body).toEqual({
      state: {
        allowed: true,
        reason: 'allowed',
        limit: 2,
        remaining: 1,
        retryAfterMs: 0,
        resetMs: 60_000,
        key: '127.0.0.1',
      },
    });
  });

  it('awaits onLimited with (ctx.request, ctx, decision), counter headers already set', async () => {
    const clock = manualClock(0);
    const onLimited = vi.fn<OnLimited>(async (req, ctx, decision: Decision) => {
      await Promise.resolve();
      ctx.status = 503;
      ctx.body = {
        mine: true,
        request: req === ctx.request,
        state: ctx.state.rateLimit === decision,
      };
    });
    const handler = app(rateLimit({ limit: 1, clock, timers: clock, onLimited }), ok);
    await request(handler).get('/').expect(200);
    const refused = await request(handler).get('/');
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ mine: true, request: true, state: true });
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers.ratelimit).toBe('"default";r=0;t=60');
  });

  it('hands Koa’s request object (ctx.request, with .ctx) to key, skip and verify', async () => {
    const seen: unknown[] = [];
    const see = <T>(value: unknown, result: T): T => {
      seen.push(value);
      return result;
    };
    const handler = app(
      (ctx, next) => {
        ctx.state.user = 'alice';
        return next();
      },
      rateLimit({
        key: (req) => see(req.ctx.state.user, 'k'),
        skip: (req) => see(req.path, false),
      }),
      authGuard({ verify: (req) => see(req.get('authorization'), 'ok') }),
      ok,
    );
    await request(handler).get('/x').set('Authorization', 'Bearer t').expect(200);
    expect(seen).toEqual(['/x', 'alice', 'Bearer t']);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('verify broke');
      },
    ],
    ['rejects', () => Promise.reject(new Error('verify broke'))],
  ])('propagates a verify that %s to upstream error handling', async (_how, verify) => {
    await request(app(authGuard({ verify }), ok))
      .get('/')
      .expect(500, { error: 'verify broke' });
    await request(app(webhookGuard({ verify }), ok))
      .get('/')
      .expect(500, { error: 'verify broke' });
  });

  it("keys by the socket peer, never by Koa's ctx.ip (app.proxy ignored)", async () => {
    const a = new Koa({ proxy: true });
    a.use(rateLimit({ limit: 5 }));
    a.use((ctx) => {
      ctx.body = { ip: ctx.ip, key: ctx.state.rateLimit.key };
    });
    const reply = await request(a.callback()).get('/').set('X-Forwarded-For', '203.0.113.9');
    expect(reply.body).toEqual({ ip: '203.0.113.9', key: '127.0.0.1' });
  });

  it("stays synchronous with the memory store: returns next()'s own value, no promise of its own", () => {
    const req = { socket: { remoteAddress: '203.0.113.1' }, headers: {} };
    const res = { headersSent: false, setHeader: vi.fn() };
    const ctx = { req, res, request: {}, state: {}, set: vi.fn() };
    const downstream = Promise.resolve('downstream');
    const next = () => downstream;
    expect(rateLimit({ limit: 5 })(ctx as never, next)).toBe(downstream);
    expect(res.setHeader).toHaveBeenCalledWith('RateLimit', '"default";r=4;t=60');
    expect(authGuard({ verify: () => 'ok' })(ctx as never, next)).toBe(downstream);
    expect(webhookGuard({ verify: () => 'ok' })(ctx as never, next)).toBe(downstream);
  });

  it('names its middleware for readable stack traces', () => {
    const verify = () => 'ok' as const;
    expect([rateLimit().name, authGuard({ verify }).name, webhookGuard({ verify }).name]).toEqual([
      'portcullisRateLimit',
      'portcullisAuthGuard',
      'portcullisWebhookGuard',
    ]);
  });
});
