import { createFailureLimiter, type FailureLimiter } from '@portcullis/core';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type AnyRequest,
  type App,
  type AppSpec,
  frameworks,
  json,
  limitHeaders,
} from './harness.js';

const T0 = 1_000_000;
const JSON_TYPE = 'application/json; charset=utf-8';
const INVALID =
  '{"code":"INVALID_REQUEST","message":"unauthorized: invalid credentials","retryable":false,"details":{"code":"AUTH_INVALID","authReason":"invalid"}}';
const MISSING =
  '{"code":"INVALID_REQUEST","message":"unauthorized: credentials required","retryable":false,"details":{"code":"AUTH_MISSING","authReason":"missing"}}';
/** DESIGN 3.2, byte for byte. */
const lockedBody = (retryAfterMs: number) =>
  `{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)","retryable":true,"retryAfterMs":${retryAfterMs},"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"}}`;

function checkToken(req: AnyRequest): 'ok' | 'invalid' | 'missing' {
  const token = req.headers.authorization;
  return token === undefined ? 'missing' : token === 'Bearer right' ? 'ok' : 'invalid';
}

describe.each(frameworks)('authGuard — $name', (fw) => {
  const apps: App[] = [];
  let clock: ManualClock;
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function start(
    auth: Partial<NonNullable<AppSpec['auth']>> = {},
    behindProxy = true,
  ): Promise<App> {
    clock = manualClock(T0);
    const app = await fw.build({
      auth: {
        verify: checkToken,
        ...(auth.limiter === undefined && { clock, timers: clock }),
        ...(behindProxy && { trustedProxies: ['127.0.0.1'] }),
        ...auth,
      },
    });
    apps.push(app);
    return app;
  }
  /** A request from `ip` (through the trusted proxy on 127.0.0.1), with a token unless `null`. */
  const login = (
    app: App,
    ip: string | undefined,
    token: string | null,
    headers: Record<string, string> = {},
  ) =>
    app.send({
      method: 'POST',
      path: '/auth',
      headers: {
        ...(ip !== undefined && { 'x-forwarded-for': ip }),
        ...(token !== null && { authorization: `Bearer ${token}` }),
        ...headers,
      },
    });
  async function fail(
    app: App,
    ip: string | undefined,
    n: number,
    headers: Record<string, string> = {},
  ) {
    for (let i = 0; i < n; i++) {
      const reply = await login(app, ip, 'wrong', headers);
      expect(reply.status).toBe(401);
      expect(reply.text).toBe(INVALID);
    }
  }
  async function expectLocked(
    app: App,
    ip: string | undefined,
    token: string,
    retryAfterMs: number,
    headers: Record<string, string> = {},
  ) {
    const reply = await login(app, ip, token, headers);
    expect(reply.status).toBe(429);
    expect(limitHeaders(reply)).toEqual({
      'retry-after': String(Math.ceil(retryAfterMs / 1000)),
      'content-type': JSON_TYPE,
    });
    expect(reply.text).toBe(lockedBody(retryAfterMs));
  }

  it('answers a wrong credential 401 with no counters advertised', async () => {
    const app = await start();
    const reply = await login(app, '203.0.113.5', 'wrong');
    expect(reply.status).toBe(401);
    expect(limitHeaders(reply)).toEqual({ 'content-type': JSON_TYPE });
    expect(reply.text).toBe(INVALID);
  });

  it('lets the right credential through', async () => {
    const app = await start();
    const reply = await login(app, '203.0.113.5', 'right');
    expect(reply.status).toBe(200);
    expect(limitHeaders(reply)).toEqual({ 'content-type': JSON_TYPE });
    expect(json(reply)).toEqual({ ok: true });
  });

  describe.each([
    ['synchronous', checkToken],
    ['asynchronous', async (req: AnyRequest) => checkToken(req)],
  ] as const)('%s verify', (_label, verify) => {
    it('the 10th wrong credential is still 401; the 11th attempt gets 429, Retry-After: 300 and the exact body', async () => {
      const app = await start({ verify });
      await fail(app, '203.0.113.5', 10);
      await expectLocked(app, '203.0.113.5', 'wrong', 300_000);
      clock.advance(3_000);
      await expectLocked(app, '203.0.113.5', 'wrong', 297_000);
    });
  });

  it('refuses the right credentials during the lockout, until exactly its end', async () => {
    const app = await start();
    await fail(app, '203.0.113.5', 10);
    await expectLocked(app, '203.0.113.5', 'right', 300_000);
    clock.set(T0 + 299_999);
    await expectLocked(app, '203.0.113.5', 'right', 1);
    clock.set(T0 + 300_000);
    expect((await login(app, '203.0.113.5', 'right')).status).toBe(200);
  });

  it('forgets the history when a lockout ends: ten more failures for the next one', async () => {
    const app = await start();
    await fail(app, '203.0.113.5', 10);
    clock.advance(300_000);
    await fail(app, '203.0.113.5', 10);
    await expectLocked(app, '203.0.113.5', 'wrong', 300_000);
  });

  it('counts failures over a sliding minute: one exactly 60 s old has expired', async () => {
    const app = await start();
    await fail(app, '203.0.113.5', 9);
    clock.advance(59_999);
    await fail(app, '203.0.113.5', 1);
    await expectLocked(app, '203.0.113.5', 'wrong', 300_000);

    await fail(app, '198.51.100.5', 9);
    clock.advance(60_000);
    await fail(app, '198.51.100.5', 9);
    clock.advance(1);
    await fail(app, '198.51.100.5', 1);
    await expectLocked(app, '198.51.100.5', 'right', 300_000);
  });

  it('the right credential resets the count', async () => {
    const app = await start();
    await fail(app, '203.0.113.5', 9);
    expect((await login(app, '203.0.113.5', 'right')).status).toBe(200);
    await fail(app, '203.0.113.5', 10);
    await expectLocked(app, '203.0.113.5', 'right', 300_000);
  });

  it('missing credentials get 401 and are never counted nor checked, even during a lockout', async () => {
    const app = await start();
    for (let i = 0; i < 50; i++) {
      const reply = await login(app, '203.0.113.5', null);
      expect(reply.status).toBe(401);
      expect(limitHeaders(reply)).toEqual({ 'content-type': JSON_TYPE });
      expect(reply.text).toBe(MISSING);
    }
    await fail(app, '203.0.113.5', 10);
    await expectLocked(app, '203.0.113.5', 'wrong', 300_000);
    const missing = await login(app, '203.0.113.5', null);
    expect(missing.status).toBe(401);
    expect(missing.text).toBe(MISSING);
  });

  it('leaves other clients unaffected by one client’s lockout', async () => {
    const app = await start();
    await fail(app, '203.0.113.5', 10);
    await expectLocked(app, '203.0.113.5', 'right', 300_000);
    await fail(app, '198.51.100.7', 1);
    expect((await login(app, '198.51.100.7', 'right')).status).toBe(200);
    expect((await login(app, '2001:db8::1', 'right')).status).toBe(200);
  });

  it('keys IPv6 clients by their /64', async () => {
    const app = await start();
    for (let i = 0; i < 10; i++) await fail(app, `2001:db8:0:1::${i + 1}`, 1);
    await expectLocked(app, '2001:db8:0:1:ffff::1', 'right', 300_000);
    expect((await login(app, '2001:db8:0:2::1', 'right')).status).toBe(200);
  });

  it('ipv6Networks: guesses spread over a /56 lock the /56, not its neighbours', async () => {
    const app = await start({ maxAttempts: 2, ipv6Networks: true });
    // 2 per /64, 8 per /56: four /64s spend the /56.
    for (let n = 0; n < 4; n++) await fail(app, `2001:db8:9:10${n}::1`, 2);
    await expectLocked(app, '2001:db8:9:1ff::1', 'right', 300_000);
    expect((await login(app, '2001:db8:9:200::1', 'right')).status).toBe(200);
    expect((await login(app, '64:ff9b::203.0.113.9', 'right')).status).toBe(200);
  });

  it('takes failure-limiter options (maxAttempts, lockoutMs)', async () => {
    clock = manualClock(T0);
    const app = await fw.build({
      auth: {
        verify: checkToken,
        trustedProxies: ['127.0.0.1'],
        maxAttempts: 3,
        lockoutMs: 10_000,
        clock,
        timers: clock,
      },
    });
    apps.push(app);
    await fail(app, '203.0.113.5', 3);
    await expectLocked(app, '203.0.113.5', 'right', 10_000);
  });

  describe('loopback exemption: clean direct-local requests only', () => {
    it('never locks out a clean direct-local client', async () => {
      const app = await start({}, false);
      await fail(app, undefined, 30);
      expect((await login(app, undefined, 'right')).status).toBe(200);
    });

    it.each([
      ['X-Forwarded-For', { 'x-forwarded-for': '198.51.100.1' }],
      ['Forwarded', { forwarded: 'for=198.51.100.1' }],
      ['X-Real-IP', { 'x-real-ip': '198.51.100.1' }],
      ['X-Forwarded-Host', { 'x-forwarded-host': 'example.com' }],
    ])(
      'limits a loopback peer that sends %s (untrusted) under its own address',
      async (_name, headers) => {
        const logger = { warn: vi.fn(), error: vi.fn() };
        const app = await start({ logger }, false);
        await fail(app, undefined, 10, headers);
        await expectLocked(app, undefined, 'right', 300_000, headers);
        // the clean local client is still exempt, though it shares the address
        await fail(app, undefined, 1);
        expect((await login(app, undefined, 'right')).status).toBe(200);
        expect(logger.warn).toHaveBeenCalledWith(
          { code: 'PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY' },
          expect.any(String),
        );
      },
    );

    it('does not exempt a loopback client reached through a trusted proxy', async () => {
      const app = await start();
      await fail(app, '127.0.0.1', 10);
      await expectLocked(app, '127.0.0.1', 'right', 300_000);
    });

    it('does not exempt anyone when exemptLoopback is off', async () => {
      clock = manualClock(T0);
      const app = await fw.build({
        auth: { verify: checkToken, exemptLoopback: false, clock, timers: clock },
      });
      apps.push(app);
      await fail(app, undefined, 10);
      await expectLocked(app, undefined, 'right', 300_000);
    });
  });

  describe('browser requests (with Origin)', () => {
    it('from loopback: keyed per normalised origin, never exempt', async () => {
      const app = await start({}, false);
      const evil = { origin: 'http://evil.example' };
      await fail(app, undefined, 10, evil);
      await expectLocked(app, undefined, 'right', 300_000, evil);
      await expectLocked(app, undefined, 'right', 300_000, { origin: 'HTTP://EVIL.example:80' });
      await fail(app, undefined, 1, { origin: 'http://good.example' });
      expect((await login(app, undefined, 'right', { origin: 'http://good.example' })).status).toBe(
        200,
      );
      // Another origin of the same site shares the site's budget, which the ten failures spent.
      await expectLocked(app, undefined, 'right', 300_000, { origin: 'http://evil.example:8080' });
      expect((await login(app, undefined, 'right')).status).toBe(200);
    });

    it('from loopback: opaque origins are keyed by their own text', async () => {
      const app = await start({}, false);
      await fail(app, undefined, 10, { origin: 'null' });
      await expectLocked(app, undefined, 'right', 300_000, { origin: 'null' });
      const extension = { origin: 'chrome-extension://abcdefghijklmnop' };
      expect((await login(app, undefined, 'right', extension)).status).toBe(200);
    });

    it('from loopback: one site minting subdomains shares one budget', async () => {
      const app = await start({}, false);
      for (let i = 0; i < 10; i++)
        await fail(app, undefined, 1, { origin: `https://s${i}.evil.example` });
      await expectLocked(app, undefined, 'right', 300_000, { origin: 'https://s99.evil.example' });
      expect(
        (await login(app, undefined, 'right', { origin: 'https://good.example' })).status,
      ).toBe(200);
    });

    it('from elsewhere: keyed by client IP in the browser limiter, apart from non-browser requests', async () => {
      const app = await start();
      await fail(app, '203.0.113.5', 10, { origin: 'https://a.example' });
      await expectLocked(app, '203.0.113.5', 'right', 300_000, { origin: 'https://b.example' });
      expect((await login(app, '203.0.113.5', 'right')).status).toBe(200);
      expect(
        (await login(app, '198.51.100.9', 'right', { origin: 'https://a.example' })).status,
      ).toBe(200);
    });
  });

  it('dryRun never refuses but logs the would-be lockout', async () => {
    const logger = { warn: vi.fn(), error: vi.fn() };
    clock = manualClock(T0);
    const app = await fw.build({
      auth: {
        verify: checkToken,
        trustedProxies: ['127.0.0.1'],
        dryRun: true,
        logger,
        clock,
        timers: clock,
      },
    });
    apps.push(app);
    await fail(app, '203.0.113.5', 15);
    expect((await login(app, '203.0.113.5', 'right')).status).toBe(200);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn).toHaveBeenCalledWith(
      expect.objectContaining({ code: 'AUTH_RATE_LIMITED', dryRun: true }),
      expect.stringContaining('AUTH_RATE_LIMITED'),
    );
  });

  describe('a shared limiter', () => {
    let shared: FailureLimiter;
    const build = async (scope: string) => {
      const app = await fw.build({
        auth: { verify: checkToken, limiter: shared, scope, trustedProxies: ['127.0.0.1'] },
      });
      apps.push(app);
      return app;
    };

    it('carries a lockout across guards of the same scope, not to other scopes', async () => {
      clock = manualClock(T0);
      shared = createFailureLimiter({ clock, timers: clock });
      const [a, b, other] = [
        await build('device-token'),
        await build('device-token'),
        await build('shared-secret'),
      ];
      await fail(a, '203.0.113.5', 10);
      await expectLocked(b, '203.0.113.5', 'right', 300_000);
      expect((await login(other, '203.0.113.5', 'right')).status).toBe(200);
    });
  });
});
