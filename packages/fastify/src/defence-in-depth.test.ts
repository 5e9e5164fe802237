import type { LockoutEvent } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import Fastify, { type FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { authGuard, portcullis } from './index.js';

const LOCKED_3600 =
  '{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)","retryable":true,"retryAfterMs":3600000,"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"}}';

const PASSWORDS = new Map([
  ['alice', 'correct horse'],
  ['bob', 'battery staple'],
]);

interface Login {
  user?: unknown;
  password?: unknown;
}
const bodyOf = (request: FastifyRequest) => (request.body ?? {}) as Login;

describe('authGuard defence in depth (docs/design.md#defence-in-depth)', () => {
  /**
   * The plugin limits every route (the login route with its own `config.rateLimit`); the guard
   * runs as the route's preHandler, where Fastify has parsed the body the account comes from.
   */
  async function app(account: (request: FastifyRequest) => unknown) {
    const clock = manualClock(1_000_000);
    const calls: string[] = [];
    const events: LockoutEvent[] = [];
    const fastify = Fastify();
    await fastify.register(portcullis, {
      limit: 5,
      trustedProxies: ['127.0.0.1'],
      clock,
      timers: clock,
    });
    const guard = authGuard({
      account: (request) => {
        calls.push('account');
        return account(request) as string | undefined;
      },
      verify: (request) => {
        calls.push('verify');
        const { user, password } = bodyOf(request);
        if (password === undefined) return 'missing';
        return typeof user === 'string' && PASSWORDS.get(user) === password ? 'ok' : 'invalid';
      },
      trustedProxies: ['127.0.0.1'],
      clock,
      timers: clock,
      onLockout: (e) => events.push(e),
    });
    fastify.post(
      '/login',
      { preHandler: guard, config: { rateLimit: { limit: 1000, name: 'login' } } },
      async () => ({ ok: true }),
    );
    await fastify.ready();
    const login = (ip: string, body: Login) =>
      fastify.inject({
        method: 'POST',
        url: '/login',
        headers: { 'x-forwarded-for': ip },
        payload: body as Record<string, unknown>,
      });
    return { clock, calls, events, fastify, login };
  }

  for (const [label, account] of [
    ['synchronous', (request: FastifyRequest) => bodyOf(request).user],
    ['asynchronous', async (request: FastifyRequest) => bodyOf(request).user],
  ] as const) {
    it(`${label} account from the body, in a route with its own config.rateLimit: the 20th failure locks that pair only`, async () => {
      const { clock, calls, events, fastify, login } = await app(account);
      for (let i = 0; i < 20; i++) {
        clock.advance(10_000); // never ten in the client layer's minute
        const reply = await login('203.0.113.5', { user: 'alice', password: 'guess' });
        expect(reply.statusCode).toBe(401);
        // The route's own limit (1000, not the plugin's 5) counts the login too.
        if (i === 0) expect(reply.headers.ratelimit).toBe('"login";r=999;t=60');
      }
      expect(calls).toEqual(Array.from({ length: 20 }, () => ['account', 'verify']).flat());
      expect(events.map((e) => [e.layer, e.key, e.account, e.lockoutMs])).toEqual([
        ['pair', '203.0.113.5', 'alice', 3_600_000],
      ]);
      const locked = await login('203.0.113.5', { user: 'alice', password: 'correct horse' });
      expect(locked.statusCode).toBe(429);
      expect(locked.headers['retry-after']).toBe('3600');
      expect(locked.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(locked.body).toBe(LOCKED_3600);
      const bob = await login('203.0.113.5', { user: 'bob', password: 'battery staple' });
      expect(bob.statusCode).toBe(200);
      const other = await login('198.51.100.7', { user: 'alice', password: 'correct horse' });
      expect(other.statusCode).toBe(200);
      expect(other.json()).toEqual({ ok: true });
      await fastify.close();
    });
  }
});
