import type { LockoutEvent } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
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
/** What a runtime hands a handler beside the request (Bun's server, Deno's info): here, the peer. */
interface Info {
  readonly remoteAddress: string;
}
/** A clone: the handler gets the request, body unread, after the guard. */
const bodyOf = (request: Request) => request.clone().json() as Promise<Login>;

describe('authGuard defence in depth (docs/design.md#defence-in-depth)', () => {
  it('an async account from a clone of the body, read before verify: the 20th failure locks that pair only; the handler reads the body', async () => {
    const clock = manualClock(1_000_000);
    const calls: string[] = [];
    const events: LockoutEvent[] = [];
    const handler = authGuard<Request, [Info]>({
      account: async (request) => {
        calls.push('account');
        return (await bodyOf(request)).user as string | undefined;
      },
      verify: async (request) => {
        calls.push('verify');
        const { user, password } = await bodyOf(request);
        if (password === undefined) return 'missing';
        return typeof user === 'string' && PASSWORDS.get(user) === password ? 'ok' : 'invalid';
      },
      clientAddress: (_request, info) => info.remoteAddress,
      clock,
      timers: clock,
      onLockout: (e) => events.push(e),
    })(async (request) => Response.json({ welcome: ((await request.json()) as Login).user }));
    const login = (peer: string, body: Login) =>
      handler(
        new Request('http://api.test/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
        { remoteAddress: peer },
      );

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
