/*
 * The 1.0 request-limiter features in every framework the adapters claim: per-request limits,
 * key(req, defaultKey), outcome-based counting (skipSuccessfulRequests, skipFailedRequests,
 * requestWasSuccessful, aborted requests) and stacked limiters.
 */
import http from 'node:http';
import { createWindowLimiter, PortcullisConfigError } from '@portcullis/core';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type App, type AppSpec, frameworks, json, type Reply } from './harness.js';

const T0 = 1_700_000_000_000;

describe.each(frameworks)('1.0 request limiter on $name', (fw) => {
  let app: App | undefined;
  let clock: ManualClock;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function start(spec: (c: ManualClock) => AppSpec): Promise<App> {
    clock = manualClock(T0);
    app = await fw.build(spec(clock));
    return app;
  }

  const get = (headers: Record<string, string> = {}) =>
    (app as App).send({ path: '/limited', headers });
  const statuses = async (n: number, headers: Record<string, string> = {}) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await get(headers)).status);
    return out;
  };

  it('limit as a function of the request: the plan that applied is advertised', async () => {
    await start((c) => ({
      rateLimit: {
        limit: (req) => (req.headers['x-plan'] === 'pro' ? 3 : 1),
        clock: c,
        timers: c,
      },
    }));
    const free = await get();
    expect(free.headers['ratelimit-policy']).toBe('"default";q=1;w=60');
    expect((await get()).status).toBe(429);
    const pro = await get({ 'x-plan': 'pro' });
    expect(pro.status).toBe(200);
    expect(pro.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
    expect(pro.headers.ratelimit).toBe('"default";r=2;t=60');
    expect(await statuses(3, { 'x-plan': 'pro' })).toEqual([200, 200, 429]);
  });

  it('key(req, defaultKey) receives the client IP key', async () => {
    const seen: string[] = [];
    await start((c) => ({
      rateLimit: {
        limit: 1,
        key: (req, ip) => {
          seen.push(ip);
          return String(req.headers['x-user'] ?? ip);
        },
        clock: c,
        timers: c,
      },
    }));
    expect((await get({ 'x-user': 'alice' })).status).toBe(200);
    expect((await get({ 'x-user': 'alice' })).status).toBe(429);
    expect((await get({ 'x-user': 'bob' })).status).toBe(200);
    expect((await get()).status).toBe(200);
    expect(new Set(seen)).toEqual(new Set(['127.0.0.1']));
  });

  it('skipSuccessfulRequests: only failed requests count', async () => {
    await start((c) => ({
      rateLimit: { limit: 2, skipSuccessfulRequests: true, clock: c, timers: c },
    }));
    expect(await statuses(5)).toEqual([200, 200, 200, 200, 200]);
    expect(await statuses(2, { 'x-status': '401' })).toEqual([401, 401]);
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(json(refused)).toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('skipFailedRequests: only successful requests count', async () => {
    await start((c) => ({
      rateLimit: { limit: 2, skipFailedRequests: true, clock: c, timers: c },
    }));
    expect(await statuses(4, { 'x-status': '500' })).toEqual([500, 500, 500, 500]);
    expect(await statuses(3)).toEqual([200, 200, 429]);
  });

  it('a dry run refunds only what it counted: its would-be refusals drain no real count', async () => {
    const c = manualClock(T0);
    const limiter = createWindowLimiter({ limit: 2, dryRun: true, clock: c, timers: c });
    app = await fw.build({ rateLimit: { limiter, skipFailedRequests: true } });
    expect(await statuses(2)).toEqual([200, 200]);
    // Over the limit: refused in a dry run only, so nothing was counted and nothing is given back.
    const over = await get({ 'x-status': '500' });
    expect(over.status).toBe(500);
    expect((json(over) as { decision: unknown }).decision).toMatchObject({
      reason: 'limited',
      allowed: true,
      dryRun: true,
    });
    expect(await statuses(3, { 'x-status': '500' })).toEqual([500, 500, 500]);
    expect(limiter.peek('127.0.0.1')).toMatchObject({ reason: 'limited', remaining: 0 });
    limiter.reconfigure({ dryRun: false });
    expect(await statuses(1)).toEqual([429]);
  });

  it('requestWasSuccessful decides what success is', async () => {
    await start((c) => ({
      rateLimit: {
        limit: 1,
        skipSuccessfulRequests: true,
        // A 404 is a client's probe, not a success.
        requestWasSuccessful: (_req, res) =>
          (res as { statusCode?: number; status?: number }).statusCode !== 404 &&
          (res as { status?: number }).status !== 404,
        clock: c,
        timers: c,
      },
    }));
    expect(await statuses(3)).toEqual([200, 200, 200]);
    expect((await get({ 'x-status': '404' })).status).toBe(404);
    expect((await get()).status).toBe(429);
  });

  it('stacked limiters advertise every policy', async () => {
    await start((c) => ({
      stacked: [{ name: 'burst', limit: 5, windowMs: 1_000, clock: c, timers: c }],
      rateLimit: { name: 'daily', limit: 1000, windowMs: 86_400_000, clock: c, timers: c },
    }));
    const reply: Reply = await get();
    expect(reply.status).toBe(200);
    const items = (field: string) => (reply.headers[field] ?? '').split(', ').sort();
    expect(items('ratelimit-policy')).toEqual(['"burst";q=5;w=1', '"daily";q=1000;w=86400']);
    expect(items('ratelimit')).toEqual(['"burst";r=4;t=1', '"daily";r=999;t=86400']);
  });

  it('a typo gets a did-you-mean hint, in every adapter', async () => {
    const error = await fw.build({ rateLimit: { windowMS: 1000 } as never }).then(
      (a) => a.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PortcullisConfigError);
    expect((error as Error).message).toContain(
      'unknown option "windowMS" (did you mean "windowMs"?)',
    );
  });
});

describe.each(frameworks.filter((f) => f.overSocket))('aborted requests on $name', (fw) => {
  it('an aborted request counts as failed', async () => {
    const clock = manualClock(T0);
    const app = await fw.build({
      rateLimit: { limit: 1, skipFailedRequests: true, clock, timers: clock },
    });
    try {
      await abortWhilePending(app.port as number);
      // The aborted request was refunded: the limit of 1 is still whole.
      const after = [
        (await app.send({ path: '/limited' })).status,
        (await app.send({ path: '/limited' })).status,
      ];
      expect(after).toEqual([200, 429]);
    } finally {
      await app.close();
    }
  });
});

/**
 * Sends a request its handler never answers and closes the connection once the server has it;
 * resolves after the server has seen the close (its response 'close' event runs first).
 */
function abortWhilePending(port: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/limited', headers: { 'x-hang': '1' } });
    req.on('error', () => undefined);
    // Real time, not the injected clock: this waits for sockets, not for a limit to pass.
    setTimeout(() => {
      req.destroy();
      setTimeout(resolve, 100);
    }, 100);
  });
}

describe.each(frameworks)('1.0 configuration on $name', (fw) => {
  it('a factory mounted uncalled answers with a config error saying to call it', async () => {
    const app = await fw.build({ mountUncalled: true });
    try {
      const reply = await app.send({ path: '/uncalled' });
      expect(reply.status).toBe(500);
      expect(json(reply)).toMatchObject({
        code: 'ERR_PORTCULLIS_FACTORY_NOT_CALLED',
        message: expect.stringContaining(
          'rateLimit is a factory: mount its result, rateLimit(options)',
        ),
      });
    } finally {
      await app.close();
    }
  });

  it('a shared limiter reconfigured live: new numbers from the next request, counts kept', async () => {
    const clock = manualClock(T0);
    const limiter = createWindowLimiter({ limit: 1, clock, timers: clock });
    const app = await fw.build({ rateLimit: { limiter } });
    try {
      expect((await app.send({ path: '/limited' })).status).toBe(200);
      expect((await app.send({ path: '/limited' })).status).toBe(429);
      limiter.reconfigure({ limit: 3 });
      const after = await app.send({ path: '/limited' });
      expect(after.status).toBe(200);
      expect(after.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
      expect(after.headers.ratelimit).toBe('"default";r=1;t=60');
    } finally {
      await app.close();
    }
  });
});
