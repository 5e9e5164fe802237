import type { LockoutEvent } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { type Context, Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { authGuard } from './index.js';

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
/** Hono keeps the parsed body: the account function, verify and the handler each read it. */
const bodyOf = (c: Context) => c.req.json<Login>();

describe('authGuard defence in depth (docs/design.md#defence-in-depth)', () => {
  it('an async account from the JSON body, read before verify: the 20th failure locks that pair only; the handler still reads the body', async () => {
    const clock = manualClock(1_000_000);
    const calls: string[] = [];
    const events: LockoutEvent[] = [];
    const app = new Hono();
    app.post(
      '/login',
      authGuard({
        account: async (c) => {
          calls.push('account');
          const { user } = await bodyOf(c);
          return user as string | undefined;
        },
        verify: async (c) => {
          calls.push('verify');
          const { user, password } = await bodyOf(c);
          if (password === undefined) return 'missing';
          return typeof user === 'string' && PASSWORDS.get(user) === password ? 'ok' : 'invalid';
        },
        clientAddress: (c) => c.req.header('x-peer'),
        clock,
        timers: clock,
        onLockout: (e) => events.push(e),
      }),
      async (c) => c.json({ welcome: (await bodyOf(c)).user }),
    );
    const login = (peer: string, body: Login) =>
      app.request('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-peer': peer },
        body: JSON.stringify(body),
      });

    for (let i = 0; i < 20; i++) {
      clock.advance(10_000); // never ten in the client layer's minute
      expect((await login('203.0.113.5', { user: 'alice', password: 'guess' })).status).toBe(401);
    }
    expect(calls).toEqual(Array.from({ length: 20 }, () => ['account', 'verify']).flat());
    expect(events.map((e) => [e.layer, e.key, e.account, e.lockoutMs])).toEqual([
      ['pair', '203.0.113.5', 'alice', 3_600_000],
    ]);
    const locked = await login('203.0.113.5', { user: 'alice', password: 'correct horse' });
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('3600');
    expect(locked.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await locked.text()).toBe(LOCKED_3600);
    const bob = await login('203.0.113.5', { user: 'bob', password: 'battery staple' });
    expect(bob.status).toBe(200);
    expect(await bob.json()).toEqual({ welcome: 'bob' });
    const other = await login('198.51.100.7', { user: 'alice', password: 'correct horse' });
    expect(other.status).toBe(200);
    expect(await other.json()).toEqual({ welcome: 'alice' });
  });
});
