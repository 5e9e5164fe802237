import type { Decision } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { createRequire } from 'node:module';
import express5, { type ErrorRequestHandler, type Express } from 'express';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { authGuard, rateLimit, webhookGuard } from './index.js';

// Express 4 is installed as `express4` (npm:express@4); its API is the one the types describe.
const express4 = createRequire(import.meta.url)('express4') as typeof express5;

const errorHandler: ErrorRequestHandler = (err: Error, _req, res, _next) => {
  res.status(500).json({ error: err.message });
};

describe.each([
  ['express 5', express5],
  ['express 4', express4],
])('@portcullis/express on %s', (_name, express) => {
  function app(mount: (app: Express) => void): Express {
    const a = express();
    mount(a);
    a.use(errorHandler);
    return a;
  }

  it('the mounted middleware carries its limiter and reconfigure (live numbers)', async () => {
    const clock = manualClock(0);
    const limit = rateLimit({ limit: 5, clock, timers: clock });
    const guard = authGuard({ verify: () => 'invalid', clock, timers: clock });
    const a = app((a) => {
      a.post('/login', guard, (_req, res) => res.send('in'));
      a.use(limit);
      a.get('/', (_req, res) => res.send('ok'));
    });
    await request(a).get('/').expect(200);
    limit.reconfigure({ limit: 2 });
    const second = await request(a).get('/');
    expect(second.headers['ratelimit-policy']).toBe('"default";q=2;w=60');
    await request(a).get('/').expect(429);
    expect(limit.limiter.rule.limit).toBe(2);
    guard.reconfigure({ maxAttempts: 1 });
    await request(a).post('/login').set('Origin', 'http://x.example').expect(401);
    await request(a).post('/login').set('Origin', 'http://x.example').expect(429);
    expect(guard.limiter.config.maxAttempts).toBe(1);
  });

  it('close() on each middleware stops the timers it built, never a limiter passed to it', async () => {
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
    const a = app((a) => {
      a.post('/login', guard, (_req, res) => res.send('in'));
      a.post('/hook', hook, (_req, res) => res.send('in'));
      a.use(limit);
      a.get('/', (_req, res) => res.send('ok'));
    });
    await request(a).get('/').expect(200);
    await request(a).post('/login').expect(401);
    await request(a).post('/hook').expect(401);
    // Each built store armed its one sweep timer when it took its first key.
    expect(clock.pendingTimers()).toBe(3);
    await Promise.all([limit.close(), guard.close(), hook.close()]);
    expect(clock.pendingTimers()).toBe(0);
    const shared = rateLimit({ limiter: limit.limiter });
    await shared.close();
    expect((await limit.limiter.peek('x')).allowed).toBe(true);
  });

  it('leaves a response an earlier middleware already sent alone (no ERR_HTTP_HEADERS_SENT)', async () => {
    const clock = manualClock(0);
    const errors: unknown[] = [];
    const a = express();
    // An earlier middleware answers but still calls next(), as some logging/caching layers do.
    a.use((_req, res, next) => {
      res.status(418).send('early');
      next();
    });
    a.use(rateLimit({ limit: 1, clock, timers: clock }));
    a.use(authGuard({ verify: () => 'invalid', clock, timers: clock }));
    a.get('/', (_req, res) => {
      if (!res.headersSent) res.send('late');
    });
    a.use(((err, _req, _res, next) => {
      errors.push(err);
      next();
    }) as ErrorRequestHandler);
    for (let i = 0; i < 3; i++) {
      const r = await request(a).get('/');
      expect(r.status).toBe(418);
      expect(r.text).toBe('early');
      expect(r.headers.ratelimit).toBeUndefined();
    }
    expect(errors).toEqual([]);
  });

  it('calls onLimited with the request, the response and the decision, counter headers already set', async () => {
    const clock = manualClock(0);
    const onLimited = vi.fn((req: express5.Request, res: express5.Response, decision: Decision) => {
      res
        .status(503)
        .json({ mine: true, sameDecision: req.rateLimit === decision, reason: decision.reason });
    });
    const a = app((a) => {
      a.use(rateLimit({ limit: 1, clock, timers: clock, onLimited }));
      a.get('/', (_req, res) => res.send('ok'));
    });
    await request(a).get('/').expect(200, 'ok');
    const refused = await request(a).get('/');
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ mine: true, sameDecision: true, reason: 'limited' });
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.headers.ratelimit).toBe('"default";r=0;t=60');
    expect(onLimited).toHaveBeenCalledTimes(1);
  });

  it('hands an asynchronous onLimited failure to the error handler', async () => {
    const clock = manualClock(0);
    const a = app((a) => {
      a.use(
        rateLimit({
          limit: 1,
          clock,
          timers: clock,
          onLimited: async () => Promise.reject(new Error('handler broke')),
        }),
      );
      a.get('/', (_req, res) => res.send('ok'));
    });
    await request(a).get('/').expect(200);
    await request(a).get('/').expect(500, { error: 'handler broke' });
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
    const a = app((a) => {
      a.post('/auth', authGuard({ verify }), (_req, res) => res.send('in'));
      a.post('/hook', webhookGuard({ verify }), (_req, res) => res.send('in'));
    });
    await request(a).post('/auth').expect(500, { error: 'verify broke' });
    await request(a).post('/hook').expect(500, { error: 'verify broke' });
  });

  it('reports a verify that returns something else than ok/invalid/missing', async () => {
    const a = app((a) => {
      a.post('/auth', authGuard({ verify: () => 'yes' as 'ok' }), (_req, res) => res.send('in'));
    });
    const reply = await request(a).post('/auth').expect(500);
    expect(reply.body.error).toMatch(/verify\(\) must return 'ok', 'invalid' or 'missing'/);
  });

  it('hands the Express request to key, skip and verify', async () => {
    const seen: unknown[] = [];
    const see = <T>(value: unknown, result: T): T => {
      seen.push(value);
      return result;
    };
    const a = app((a) => {
      a.use(express.json());
      a.post(
        '/',
        rateLimit({ key: (req) => see(req.body, 'k'), skip: (req) => see(req.path, false) }),
        authGuard({
          verify: (req) => see(req.body, req.body.token === 's3cret' ? 'ok' : 'invalid'),
        }),
        (_req, res) => res.send('in'),
      );
    });
    await request(a).post('/').send({ token: 's3cret' }).expect(200, 'in');
    expect(seen).toEqual(['/', { token: 's3cret' }, { token: 's3cret' }]);
  });

  it("keys by the socket peer, never by Express's req.ip (trust proxy ignored)", async () => {
    const a = app((a) => {
      a.set('trust proxy', true);
      a.get('/', rateLimit({ limit: 5 }), (req, res) =>
        res.json({ ip: req.ip, key: req.rateLimit?.key }),
      );
    });
    const reply = await request(a).get('/').set('X-Forwarded-For', '203.0.113.9');
    expect(reply.body).toEqual({ ip: '203.0.113.9', key: '127.0.0.1' });
  });

  it('writes the answer exactly: no ETag, a Content-Length, the JSON as the core built it', async () => {
    const clock = manualClock(0);
    const a = app((a) =>
      a.get('/', rateLimit({ limit: 1, clock, timers: clock }), (_req, res) => res.send('ok')),
    );
    await request(a).get('/');
    const refused = await request(a).get('/');
    expect(refused.headers.etag).toBeUndefined();
    expect(refused.headers['content-length']).toBe(String(Buffer.byteLength(refused.text)));
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('stays synchronous with the memory store: next() runs before the middleware returns', () => {
    const req = { socket: { remoteAddress: '203.0.113.1' }, headers: {} };
    const res = { setHeader: vi.fn() };
    const next = vi.fn();
    rateLimit({ limit: 5 })(req as never, res as never, next);
    expect(next).toHaveBeenCalledTimes(1);
    expect(res.setHeader).toHaveBeenCalledWith('RateLimit', '"default";r=4;t=60');
    authGuard({ verify: () => 'ok' })(req as never, res as never, next);
    webhookGuard({ verify: () => 'ok' })(req as never, res as never, next);
    expect(next).toHaveBeenCalledTimes(3);
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
