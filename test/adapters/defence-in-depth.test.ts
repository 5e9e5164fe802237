/*
 * Defence in depth through every framework (docs/design.md#defence-in-depth): `account` reaches
 * each adapter's authGuard untranslated, is read before `verify`, and the pair layer's refusal is
 * the same answer as the client layer's, byte for byte but for the wait.
 */
import type { LockoutEvent } from '@portcullis/core';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type AnyRequest, type App, type AppSpec, frameworks, type Reply } from './harness.js';

const T0 = 1_000_000;
const INVALID =
  '{"code":"INVALID_REQUEST","message":"unauthorized: invalid credentials","retryable":false,"details":{"code":"AUTH_INVALID","authReason":"invalid"}}';
/** DESIGN 3.2, byte for byte. */
const lockedBody = (retryAfterMs: number) =>
  `{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)","retryable":true,"retryAfterMs":${retryAfterMs},"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"}}`;

/** The password check: `Bearer right` is every account's password. */
function checkToken(req: AnyRequest): 'ok' | 'invalid' | 'missing' {
  const token = req.headers.authorization;
  return token === undefined ? 'missing' : token === 'Bearer right' ? 'ok' : 'invalid';
}

const userOf = (req: AnyRequest) => req.headers['x-user'] as string | undefined;

/** Every header but the ones a server stamps per response (`date`). */
function stable(reply: Reply): Record<string, string> {
  const { date: _date, ...rest } = reply.headers;
  return rest;
}

describe.each(frameworks)('authGuard defence in depth — $name', (fw) => {
  const apps: App[] = [];
  let clock: ManualClock;
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function start(auth: Partial<NonNullable<AppSpec['auth']>>): Promise<App> {
    clock = manualClock(T0);
    const app = await fw.build({
      // The Fastify plugin variants register the plugin only beside a rateLimit (the /auth route
      // opts out of it): the guard must work with the plugin's onRoute hook in place.
      rateLimit: { limit: 1000 },
      auth: { verify: checkToken, clock, timers: clock, trustedProxies: ['127.0.0.1'], ...auth },
    });
    apps.push(app);
    return app;
  }
  /** A login from `ip` (through the trusted proxy on 127.0.0.1) for `user` with `token`. */
  const login = (app: App, ip: string, user: string, token: string) =>
    app.send({
      method: 'POST',
      path: '/auth',
      headers: { 'x-forwarded-for': ip, 'x-user': user, authorization: `Bearer ${token}` },
    });

  describe.each([
    ['synchronous', (req: AnyRequest): string | undefined => userOf(req)],
    ['asynchronous', async (req: AnyRequest): Promise<string | undefined> => userOf(req)],
  ] as const)('%s account', (_label, account) => {
    it('the 20th consecutive failure of one client against one account locks that pair only: 429, Retry-After: 3600, the AUTH_RATE_LIMITED body', async () => {
      const events: LockoutEvent[] = [];
      const app = await start({ account, onLockout: (e) => events.push(e) });
      // Ten seconds apart: never ten in the client layer's minute, so only the pair counts up.
      for (let i = 0; i < 20; i++) {
        if (i > 0) clock.advance(10_000);
        const reply = await login(app, '203.0.113.5', 'alice', 'wrong');
        expect(reply.status).toBe(401);
        expect(reply.text).toBe(INVALID);
      }
      expect(events).toEqual([
        {
          layer: 'pair',
          scope: 'default',
          key: '203.0.113.5',
          account: 'alice',
          lockoutMs: 3_600_000,
          until: T0 + 190_000 + 3_600_000,
        },
      ]);
      // The right password of the locked pair is refused.
      const pair = await login(app, '203.0.113.5', 'alice', 'right');
      expect(pair.status).toBe(429);
      expect(pair.headers['retry-after']).toBe('3600');
      expect(pair.text).toBe(lockedBody(3_600_000));
      // The client keeps its other accounts; the account its other clients.
      expect((await login(app, '203.0.113.5', 'bob', 'right')).status).toBe(200);
      expect((await login(app, '198.51.100.7', 'alice', 'right')).status).toBe(200);

      // A client-layer lockout (ten failures in a minute) for comparison: the same answer, but for
      // the wait (Retry-After, and retryAfterMs in the body, so Content-Length when sent).
      for (let i = 0; i < 10; i++)
        expect((await login(app, '192.0.2.50', 'carol', 'wrong')).status).toBe(401);
      const client = await login(app, '192.0.2.50', 'carol', 'right');
      expect(client.status).toBe(429);
      expect(client.headers['retry-after']).toBe('300');
      expect(client.text).toBe(lockedBody(300_000));
      expect(events.map((e) => [e.layer, e.key])).toEqual([
        ['pair', '203.0.113.5'],
        ['client', '192.0.2.50'],
      ]);
      const expected: Record<string, string> = { ...stable(client), 'retry-after': '3600' };
      if (expected['content-length'] !== undefined)
        expected['content-length'] = String(Buffer.byteLength(pair.text));
      expect(stable(pair)).toEqual(expected);
      expect(pair.text).toBe(
        client.text.replace('"retryAfterMs":300000,', '"retryAfterMs":3600000,'),
      );
    });

    it('reads the account before verify, on every attempt', async () => {
      const calls: string[] = [];
      const app = await start({
        account: (req) => {
          calls.push(`account ${userOf(req)}`);
          return account(req);
        },
        verify: (req) => {
          calls.push(`verify ${userOf(req)}`);
          return checkToken(req);
        },
      });
      expect((await login(app, '203.0.113.5', 'alice', 'wrong')).status).toBe(401);
      expect((await login(app, '203.0.113.5', 'bob', 'right')).status).toBe(200);
      expect(calls).toEqual(['account alice', 'verify alice', 'account bob', 'verify bob']);
    });
  });
});
