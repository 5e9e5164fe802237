import { describe, expect, it, vi } from 'vitest';
import type { RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import { authRateLimitedError } from '../error-shapes.js';
import { createFailureLimiter } from '../failure-limiter.js';
import type { Store } from '../store.js';
import { manualClock } from '../testing/manual-clock.js';
import type { GateResult } from './answer.js';
import { type AuthOutcome, createAuthGate } from './auth-gate.js';
import { createRequestGate, type RequestResult } from './request-gate.js';
import { createWebhookGate } from './webhook-gate.js';

const raw = (ip: string, headers: Record<string, string> = {}): RawRequest => ({
  socket: { remoteAddress: ip },
  headers,
});

function authGate(extra: Record<string, unknown> = {}) {
  const clock = manualClock(0);
  const gate = createAuthGate<{ token?: string }>({
    verify: (r) => (r.token === undefined ? 'missing' : r.token === 'right' ? 'ok' : 'invalid'),
    scope: 'shared-secret',
    clock,
    timers: clock,
    ...extra,
  });
  return { clock, gate };
}

describe('createAuthGate', () => {
  it('401 for the first ten wrong tokens, then 429 with the exact body even for the right token', () => {
    const { clock, gate } = authGate();
    const client = raw('203.0.113.1');
    for (let i = 0; i < 10; i++) {
      const r = gate.run(client, { token: 'wrong' }) as GateResult;
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.answer.status).toBe(401);
    }
    clock.advance(3_000);
    const locked = gate.run(client, { token: 'right' }) as GateResult;
    expect(locked.ok).toBe(false);
    if (!locked.ok) {
      expect(locked.answer).toEqual({
        status: 429,
        headers: { 'Retry-After': '297', 'Content-Type': 'application/json; charset=utf-8' },
        body: JSON.stringify(authRateLimitedError(297_000)),
      });
    }
    expect((gate.run(raw('203.0.113.2'), { token: 'right' }) as GateResult).ok).toBe(true);
  });

  it('missing credentials are neither checked nor counted', async () => {
    const { gate } = authGate();
    const client = raw('203.0.113.3');
    for (let i = 0; i < 50; i++) {
      const r = gate.run(client, {}) as GateResult;
      if (!r.ok) expect(r.answer.status).toBe(401);
      expect(r.decision).toBeUndefined();
    }
    for (let i = 0; i < 10; i++) await gate.run(client, { token: 'x' });
    const r = gate.run(client, {}) as GateResult;
    expect(!r.ok && r.answer.status).toBe(401);
  });

  it('a right credential resets the scope for that client', async () => {
    const { gate } = authGate();
    const client = raw('203.0.113.4');
    for (let i = 0; i < 9; i++) await gate.run(client, { token: 'x' });
    expect((gate.run(client, { token: 'right' }) as GateResult).ok).toBe(true);
    for (let i = 0; i < 9; i++) await gate.run(client, { token: 'x' });
    expect((gate.run(client, { token: 'right' }) as GateResult).ok).toBe(true);
  });

  it('browsers use their own budget, keyed per origin from loopback and never exempt', async () => {
    const { gate } = authGate();
    const page = raw('127.0.0.1', { origin: 'http://evil.example:8000' });
    for (let i = 0; i < 10; i++) await gate.run(page, { token: 'x' });
    const r = gate.run(page, { token: 'right' }) as GateResult;
    expect(!r.ok && r.answer.status).toBe(429);
    expect(
      (
        gate.run(raw('127.0.0.1', { origin: 'http://other.example:8000' }), {
          token: 'right',
        }) as GateResult
      ).ok,
    ).toBe(true);
    for (let i = 0; i < 30; i++) await gate.run(raw('127.0.0.1'), { token: 'x' });
    expect((gate.run(raw('127.0.0.1'), { token: 'right' }) as GateResult).ok).toBe(true);
    expect(gate.browserLimiter.config).toMatchObject({
      exemptLoopback: false,
      maxAttempts: 10,
      name: 'auth-browser',
    });
  });

  it('answers 503 when the store refuses to decide, and propagates async verify', async () => {
    const broken: Decision = {
      allowed: false,
      reason: 'store-error',
      limit: 10,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 0,
      key: 'k',
    };
    const store = {
      consume: () => broken,
      peek: () => broken,
      refund: () => undefined,
      checkFailures: () => Promise.resolve(broken),
      recordFailure: () => Promise.resolve(broken),
      recordSuccess: () => Promise.resolve(broken),
      delete: () => undefined,
      size: () => 0,
      close: () => undefined,
    } satisfies Store;
    const gate = createAuthGate<unknown>({
      verify: async (): Promise<AuthOutcome> => 'ok',
      limiter: createFailureLimiter({ store }),
    });
    const r = await gate.run(raw('203.0.113.9'), {});
    expect(!r.ok && r.answer.status).toBe(503);
  });

  it('a blank scope is the default scope; the gate logger hears lockouts of both limiters', async () => {
    const warn = vi.fn();
    const gate = createAuthGate<{ token?: string }>({
      verify: () => 'invalid',
      scope: '  ',
      logger: { warn, error: vi.fn() },
    });
    for (let i = 0; i < 10; i++) await gate.run(raw('203.0.113.50'), {});
    for (let i = 0; i < 10; i++)
      await gate.run(raw('127.0.0.1', { origin: 'http://a.localhost' }), {});
    expect(gate.limiter.check('203.0.113.50', 'default')).toMatchObject({ reason: 'locked' });
    expect(warn).toHaveBeenCalledTimes(3);
    expect(warn.mock.calls.map((c) => c[0])).toMatchObject([
      { code: 'AUTH_RATE_LIMITED', limiter: 'auth', scope: 'default', key: '203.0.113.50' },
      {
        code: 'AUTH_RATE_LIMITED',
        limiter: 'auth-browser',
        scope: 'default',
        key: 'browser-origin:http://a.localhost',
      },
      {
        code: 'AUTH_RATE_LIMITED',
        limiter: 'auth-browser-site',
        scope: 'default',
        key: 'browser-site:localhost',
      },
    ]);
  });

  it('rejects bad setups', () => {
    expect(() => createAuthGate({} as never)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_VERIFY' }),
    );
    expect(() =>
      createAuthGate({ verify: () => 'ok', limiter: createFailureLimiter(), lockoutMs: 1 }),
    ).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMITER' }));
    expect(() => createAuthGate({ verify: () => 'ok', maxAttempts: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_MAX_ATTEMPTS' }),
    );
    expect(() => createAuthGate({ verify: () => 'ok', trustedProxies: true as never })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_TRUSTED_PROXIES' }),
    );
    expect(() =>
      createAuthGate({
        verify: () => 'ok',
        limiter: { check() {}, recordFailure() {}, recordSuccess() {} } as never,
      }),
    ).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMITER' }));
    const gate = createAuthGate({ verify: () => 'maybe' as AuthOutcome });
    expect(() => gate.run(raw('1.2.3.4'), {})).toThrow(TypeError);
  });
});

describe('createWebhookGate (20 / 60 s → 60 s)', () => {
  it('401 for the 20 failures (the 20th starts the lockout), plain 429 with Retry-After from the 21st; success resets and passes even when locked', async () => {
    const clock = manualClock(0);
    const gate = createWebhookGate<{ token?: string }>({
      verify: (r) => (r.token === undefined ? 'missing' : r.token === 'hook' ? 'ok' : 'invalid'),
      clock,
      timers: clock,
    });
    const sender = raw('198.51.100.7');
    for (let i = 1; i <= 20; i++) {
      const r = gate.run(sender, i % 2 ? {} : { token: 'bad' }) as GateResult;
      expect(!r.ok && r.answer, `failure ${i}`).toEqual({
        status: 401,
        headers: { 'Content-Type': 'text/plain; charset=utf-8' },
        body: 'Unauthorized',
      });
    }
    const limited = gate.run(sender, { token: 'bad' }) as GateResult;
    expect(!limited.ok && limited.answer).toEqual({
      status: 429,
      headers: { 'Retry-After': '60', 'Content-Type': 'text/plain; charset=utf-8' },
      body: 'Too Many Requests',
    });
    clock.advance(500);
    const again = gate.run(sender, {}) as GateResult;
    expect(!again.ok && again.answer.headers['Retry-After']).toBe('60');
    clock.advance(500);
    expect(gate.limiter.check({ key: '198.51.100.7' })).toMatchObject({ retryAfterMs: 59_000 });
    expect((gate.run(sender, { token: 'hook' }) as GateResult).ok).toBe(true);
    const fresh = gate.run(sender, { token: 'bad' }) as GateResult;
    expect(!fresh.ok && fresh.answer.status).toBe(401);
    for (let i = 0; i < 20; i++) await gate.run(raw('127.0.0.1'), { token: 'bad' });
    const local = gate.run(raw('127.0.0.1'), { token: 'bad' }) as GateResult;
    expect(!local.ok && local.answer.status).toBe(429);
  });

  it('takes only limiters made by createFailureLimiter', () => {
    expect(() =>
      createWebhookGate({
        verify: () => 'ok',
        limiter: { check() {}, recordFailure() {}, recordSuccess() {} } as never,
      }),
    ).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMITER' }));
  });
});

describe('createRequestGate', () => {
  it('keys by client IP (IPv6 by /64), advertises IETF headers, refuses with 429 + JSON', async () => {
    const clock = manualClock(0);
    const gate = createRequestGate<unknown>({ limit: 2, windowMs: 60_000, clock, timers: clock });
    expect(gate.run(raw('2001:db8:1:2::1'), {})).toEqual({
      ok: true,
      decision: {
        allowed: true,
        reason: 'allowed',
        limit: 2,
        remaining: 1,
        retryAfterMs: 0,
        resetMs: 60_000,
        key: '2001:db8:1:2::/64',
      },
      headers: { 'RateLimit-Policy': '"default";q=2;w=60', RateLimit: '"default";r=1;t=60' },
      answer: undefined,
    });
    await gate.run(raw('2001:db8:1:2::99'), {});
    clock.advance(10_000);
    const r = gate.run(raw('2001:db8:1:2:ffff::'), {}) as RequestResult;
    expect(r.answer).toEqual({
      status: 429,
      headers: {
        'RateLimit-Policy': '"default";q=2;w=60',
        RateLimit: '"default";r=0;t=50',
        'Retry-After': '50',
        'Content-Type': 'application/json; charset=utf-8',
      },
      body: '{"code":"RATE_LIMITED","message":"too many requests; retry after 50s","retryable":true,"retryAfterMs":50000}',
    });
    expect((gate.run(raw('2001:db8:1:3::1'), {}) as RequestResult).ok).toBe(true);
  });

  it('honours skip, key and cost (sync and async)', async () => {
    const clock = manualClock(0);
    const gate = createRequestGate<{ user: string; heavy?: boolean }>({
      limit: 3,
      clock,
      timers: clock,
      key: (r) => `user:${r.user}`,
      skip: (r) => r.user === 'admin',
      cost: async (r) => (r.heavy ? 3 : 1),
      headers: false,
    });
    expect(gate.run(raw('1.1.1.1'), { user: 'admin' })).toBeUndefined();
    const heavy = await gate.run(raw('1.1.1.1'), { user: 'bob', heavy: true });
    expect(heavy).toMatchObject({
      ok: true,
      headers: {},
      decision: { key: 'user:bob', remaining: 0 },
    });
    const refused = await gate.run(raw('2.2.2.2'), { user: 'bob' });
    expect(refused?.headers).toEqual({ 'Retry-After': '60' });
  });

  it('rejects a shared limiter together with its numbers', () => {
    expect(() =>
      createRequestGate({ limit: 5, limiter: { consume() {}, peek() {}, reset() {} } as never }),
    ).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMITER' }));
    expect(() => createRequestGate({ headers: 'draft-6' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_HEADERS' }),
    );
    expect(() => createRequestGate({ cost: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_COST' }),
    );
  });
});

describe('one options shape', () => {
  it('auth and webhook gates take the failure-limiter options flat', async () => {
    const clock = manualClock(0);
    const gate = createAuthGate<{ token?: string }>({
      verify: () => 'invalid',
      scope: 'password',
      maxAttempts: 2,
      lockoutMs: 600_000,
      clock,
      timers: clock,
    });
    expect(gate.limiter.config).toMatchObject({ maxAttempts: 2, lockoutMs: 600_000 });
    const client = raw('203.0.113.60');
    await gate.run(client, {});
    await gate.run(client, {});
    const locked = gate.run(client, {}) as GateResult;
    expect(!locked.ok && locked.answer.headers['Retry-After']).toBe('600');
    const hook = createWebhookGate<{ token?: string }>({ verify: () => 'ok', maxAttempts: 3 });
    expect(hook.limiter.config.maxAttempts).toBe(3);
  });

  it('the nested options key is gone, with a hint; limiter excludes limiter options', () => {
    expect(() =>
      createAuthGate({ verify: () => 'ok', options: { maxAttempts: 3 } } as never),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_PORTCULLIS_OPTIONS',
        message: expect.stringContaining('go beside the others since 1.0'),
      }),
    );
    expect(() =>
      createWebhookGate({ verify: () => 'ok', limiter: createFailureLimiter(), windowMs: 5 }),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_PORTCULLIS_LIMITER',
        message: expect.stringContaining('"windowMs" belongs to the limiter you pass'),
      }),
    );
  });
});
