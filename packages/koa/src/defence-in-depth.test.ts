import { createRequire } from 'node:module';
import type { LockoutEvent } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import Koa3 from 'koa';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { authGuard } from './index.js';

// Koa 2 is installed as `koa2` (npm:koa@2); its API is the one the types describe.
const Koa2 = createRequire(import.meta.url)('koa2') as typeof Koa3;

const LOCKED_3600 =
  '{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)","retryable":true,"retryAfterMs":3600000,"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"}}';

const PASSWORDS = new Map([
  ['alice', 'correct horse'],
  ['bob', 'battery staple'],
]);

/** The user and password of an `Authorization: Basic …` header. */
function basic(header: string): { user: string; password: string } | undefined {
  if (!header.startsWith('Basic ')) return undefined;
  const text = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

describe.each([
  ['koa 3', Koa3],
  ['koa 2', Koa2],
])('authGuard defence in depth on %s (docs/design.md#defence-in-depth)', (_name, Koa) => {
  for (const label of ['synchronous', 'asynchronous'] as const) {
    it(`${label} account of the Koa request, read before verify: the 20th failure locks that pair only`, async () => {
      const clock = manualClock(1_000_000);
      const calls: string[] = [];
      const events: LockoutEvent[] = [];
      const userOf = (header: string) => basic(header)?.user;
      const app = new Koa();
      app.silent = true;
      app.use(
        authGuard({
          account: (req) => {
            calls.push('account');
            const user = userOf(req.get('authorization'));
            return label === 'synchronous' ? user : Promise.resolve(user);
          },
          verify: (req) => {
            calls.push('verify');
            const given = basic(req.get('authorization'));
            if (given === undefined) return 'missing';
            return PASSWORDS.get(given.user) === given.password ? 'ok' : 'invalid';
          },
          trustedProxies: ['127.0.0.1'],
          clock,
          timers: clock,
          onLockout: (e) => events.push(e),
        }),
      );
      app.use((ctx) => {
        ctx.body = { ok: true };
      });
      const server = app.callback();
      const login = (ip: string, user: string, password: string) =>
        request(server).post('/login').set('X-Forwarded-For', ip).auth(user, password);

      for (let i = 0; i < 20; i++) {
        clock.advance(10_000); // never ten in the client layer's minute
        await login('203.0.113.5', 'alice', 'guess').expect(401);
      }
      expect(calls).toEqual(Array.from({ length: 20 }, () => ['account', 'verify']).flat());
      expect(events.map((e) => [e.layer, e.key, e.account, e.lockoutMs])).toEqual([
        ['pair', '203.0.113.5', 'alice', 3_600_000],
      ]);
      const locked = await login('203.0.113.5', 'alice', 'correct horse');
      expect(locked.status).toBe(429);
      expect(locked.headers['retry-after']).toBe('3600');
      expect(locked.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(locked.text).toBe(LOCKED_3600);
      await login('203.0.113.5', 'bob', 'battery staple').expect(200, { ok: true });
      await login('198.51.100.7', 'alice', 'correct horse').expect(200, { ok: true });
    });
  }
});
