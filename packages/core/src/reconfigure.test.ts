import { describe, expect, it } from 'vitest';
import { createFailureLimiter } from './failure-limiter.js';
import type { GateResult } from './http/answer.js';
import { createAuthGate } from './http/auth-gate.js';
import { createRequestGate, type RequestResult } from './http/request-gate.js';
import { manualClock } from './testing/manual-clock.js';
import { createWindowLimiter } from './window-limiter.js';

describe('failure limiter reconfigure (live numbers)', () => {
  it('tightening maxAttempts locks a subject already over it from its next call, with the new lockout', () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ clock, timers: clock });
    for (let i = 0; i < 4; i++) limiter.recordFailure('203.0.113.1');
    limiter.recordFailure('203.0.113.2');
    limiter.reconfigure({ maxAttempts: 3, lockoutMs: 120_000 });
    expect(limiter.config).toMatchObject({ maxAttempts: 3, lockoutMs: 120_000, windowMs: 60_000 });
    expect(limiter.check('203.0.113.1')).toMatchObject({
      allowed: false,
      reason: 'locked',
      retryAfterMs: 120_000,
    });
    // Below the new max: history kept and counted toward it.
    expect(limiter.check('203.0.113.2')).toMatchObject({ allowed: true, remaining: 2 });
    limiter.recordFailure('203.0.113.2');
    expect(limiter.recordFailure('203.0.113.2')).toMatchObject({ reason: 'locked' });
  });

  it('loosening never releases an earned lockout', () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ maxAttempts: 2, clock, timers: clock });
    limiter.recordFailure('203.0.113.3');
    limiter.recordFailure('203.0.113.3');
    limiter.reconfigure({ maxAttempts: 100, windowMs: 1_000 });
    clock.advance(1_000);
    expect(limiter.check('203.0.113.3')).toMatchObject({ reason: 'locked', retryAfterMs: 299_000 });
    clock.advance(299_000);
    expect(limiter.check('203.0.113.3')).toMatchObject({ allowed: true, remaining: 100 });
  });

  it('refuses bad values and names with config errors', () => {
    const limiter = createFailureLimiter();
    expect(() => limiter.reconfigure({ maxAttempts: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_MAX_ATTEMPTS' }),
    );
    expect(() => limiter.reconfigure({ store: {} } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_UNKNOWN_OPTION' }),
    );
    expect(limiter.config.maxAttempts).toBe(10);
  });
});

describe('gates follow a reconfigured limiter', () => {
  it('the auth gate’s browser limiter and budgets take the new numbers, lockouts kept', () => {
    const clock = manualClock(0);
    const gate = createAuthGate<{ token: string }>({
      verify: (r) => (r.token === 'right' ? 'ok' : 'invalid'),
      clock,
      timers: clock,
    });
    const page = {
      socket: { remoteAddress: '127.0.0.1' },
      headers: { origin: 'https://a.example' },
    };
    for (let i = 0; i < 3; i++) gate.run(page, { token: 'x' });
    gate.reconfigure({ maxAttempts: 3 });
    const r = gate.run(page, { token: 'right' }) as GateResult;
    expect(!r.ok && r.answer.status).toBe(429);
    expect(gate.browserLimiter.config.maxAttempts).toBe(3);
  });

  it('the request gate advertises the new policy from the next request', () => {
    const clock = manualClock(0);
    const gate = createRequestGate({ limit: 5, clock, timers: clock });
    const req = () => ({ socket: { remoteAddress: '203.0.113.9' }, headers: {} });
    gate.run(req(), {});
    gate.reconfigure({ limit: 2, windowMs: 30_000 });
    const after = gate.run(req(), {}) as RequestResult;
    expect(after.headers).toEqual({
      'RateLimit-Policy': '"default";q=2;w=30',
      RateLimit: '"default";r=0;t=30',
    });
    expect((gate.run(req(), {}) as RequestResult).ok).toBe(false);
    expect(createWindowLimiter().reconfigure).toBeTypeOf('function');
  });
});
