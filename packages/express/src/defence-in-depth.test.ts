import type { LockoutEvent } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { createRequire } from 'node:module';
import express5, { type ErrorRequestHandler, type Request } from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { type AuthGuardOptions, authGuard } from './index.js';

// Express 4 is installed as `express4` (npm:express@4); its API is the one the types describe.
const express4 = createRequire(import.meta.url)('express4') as typeof express5;

const LOCKED_3600 =
  '{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)","retryable":true,"retryAfterMs":3600000,"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"}}';

const PASSWORDS = new Map([
  ['alice', 'correct horse'],
  ['bob', 'battery staple'],
]);

/** The login check: a JSON body `{ user, password }`; whatever else the body holds is invalid. */
function verify(req: Request): 'ok' | 'invalid' | 'missing' {
  const body = req.body as { user?: unknown; password?: unknown } | undefined;
  if (body?.password === undefined) return 'missing';
  return typeof body.user === 'string' && PASSWORDS.get(body.user) === body.password
    ? 'ok'
    : 'invalid';
}

describe.each([
  ['express 5', express5],
  ['express 4', express4],
])('authGuard defence in depth on %s (docs/design.md#defence-in-depth)', (_name, express) => {
  function app(options: Partial<AuthGuardOptions>) {
    const clock = manualClock(1_000_000);
    const events: LockoutEvent[] = [];
    const errors: unknown[] = [];
    const a = express();
    a.use(express.json());
    a.post(
      '/login',
      authGuard({
        verify,
        account: (req) => (req.body as { user?: string } | undefined)?.user,
        trustedProxies: ['127.0.0.1'],
        clock,
        timers: clock,
        onLockout: (e) => events.push(e),
        ...options,
      }),
      (_req, res) => res.json({ ok: true }),
    );
    a.use(((err: Error, _req, res, _next) => {
      errors.push(err);
      res.status(500).json({ error: err.message });
    }) as ErrorRequestHandler);
    const login = (ip: string, body: unknown) =>
      request(a)
        .post('/login')
        .set('X-Forwarded-For', ip)
        .send(body as object);
    return { clock, events, errors, login };
  }

  it('reads the account from the JSON body: the 20th failure locks that pair, the account and the client keep the rest', async () => {
    const { clock, events, login } = app({});
    for (let i = 0; i < 20; i++) {
      clock.advance(10_000); // never ten in the client layer's minute
      await login('203.0.113.5', { user: 'alice', password: 'guess' }).expect(401);
    }
    expect(events.map((e) => [e.layer, e.key, e.account])).toEqual([
      ['pair', '203.0.113.5', 'alice'],
    ]);
    const locked = await login('203.0.113.5', { user: 'alice', password: 'correct horse' });
    expect(locked.status).toBe(429);
    expect(locked.headers['retry-after']).toBe('3600');
    expect(locked.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(locked.text).toBe(LOCKED_3600);
    await login('203.0.113.5', { user: 'bob', password: 'battery staple' }).expect(200);
    await login('198.51.100.7', { user: 'alice', password: 'correct horse' }).expect(200);
  });

  it('a user field that is an object, an array, a number, null, a boolean, empty or huge shares account:invalid, and never throws', async () => {
    const { events, errors, login } = app({
      maxAttempts: 1000,
      accountLimits: { account: { maxAttempts: 8 }, pair: false, spray: false },
    });
    const users: unknown[] = [
      { $ne: null },
      ['alice', 'bob'],
      42,
      null,
      true,
      '',
      'a'.repeat(257),
      'x'.repeat(90_000), // just under express.json's 100 kB
    ];
    for (const [i, user] of users.entries()) {
      const reply = await login(`10.0.0.${i + 1}`, { user, password: 'guess' });
      expect(reply.status, JSON.stringify(user).slice(0, 40)).toBe(401);
    }
    expect(events).toEqual([
      {
        layer: 'account',
        scope: 'default',
        key: 'account:invalid',
        account: 'invalid',
        lockoutMs: 3_600_000,
        until: 1_000_000 + 3_600_000,
      },
    ]);
    // The shared bucket is under attack: an untrusted client naming any malformed account is
    // refused; real accounts are not.
    const refused = await login('10.0.1.1', { user: { deep: [1, { two: 2 }] }, password: 'x' });
    expect(refused.status).toBe(429);
    expect(refused.text).toBe(LOCKED_3600);
    await login('10.0.1.1', { user: 'alice', password: 'correct horse' }).expect(200);
    // A body without a user names no account: only the client layer counts.
    await login('10.0.1.2', { password: 'guess' }).expect(401);
    expect(errors).toEqual([]);
  });
});
