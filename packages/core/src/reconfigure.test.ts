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
  it('the auth gate’s browser limiter and budgets take the new numbers, lockouts kept', async () => {
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
    for (let i = 0; i < 3; i++) await gate.run(page, { token: 'x' });
    gate.reconfigure({ maxAttempts: 3 });
    const r = gate.run(page, { token: 'right' }) as GateResult;
    expect(!r.ok && r.answer.status).toBe(429);
    expect(gate.browserLimiter.config.maxAttempts).toBe(3);
  });

  it('the request gate advertises the new policy from the next request', async () => {
    const clock = manualClock(0);
    const gate = createRequestGate({ limit: 5, clock, timers: clock });
    const req = () => ({ socket: { remoteAddress: '203.0.113.9' }, headers: {} });
    await gate.run(req(), {});
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

describe('counts survive a change of the rules', () => {
  it.each(['fixed-window', 'sliding-window'] as const)(
    '%s: widening windowMs keeps live counts past the end the old rule stamped',
    async (algorithm) => {
      const clock = manualClock(0);
      const limiter = createWindowLimiter({
        algorithm,
        limit: 5,
        windowMs: 1000,
        clock,
        timers: clock,
      });
      limiter.consume('k');
      limiter.consume('k');
      clock.advance(500);
      limiter.reconfigure({ windowMs: 60_000 });
      const span = algorithm === 'fixed-window' ? 60_000 : 120_000;
      expect(limiter.peek('k')).toMatchObject({ allowed: true, remaining: 3, resetMs: span - 500 });
      clock.advance(1000);
      expect(limiter.peek('k')).toMatchObject({
        allowed: true,
        remaining: 3,
        resetMs: span - 1500,
      });
      // The background sweep keeps it too (it drops by the new end, not the old one).
      clock.advance(60_000);
      if (algorithm === 'sliding-window')
        expect(limiter.peek('k')).toMatchObject({ remaining: 3, resetMs: 58_500 });
      else expect(limiter.peek('k')).toMatchObject({ remaining: 5, resetMs: 0 });
      await limiter.close();
    },
  );

  it('narrowing windowMs ends a window that is over under the new rule', () => {
    const clock = manualClock(0);
    const limiter = createWindowLimiter({ limit: 2, windowMs: 60_000, clock, timers: clock });
    limiter.consume('k');
    limiter.consume('k');
    clock.advance(5000);
    expect(limiter.consume('k')).toMatchObject({ allowed: false, retryAfterMs: 55_000 });
    limiter.reconfigure({ windowMs: 1000 });
    expect(limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1, resetMs: 1000 });
  });

  it('an operator who widens the window during a brute force keeps the attacker’s count', () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ maxAttempts: 5, clock, timers: clock });
    for (let i = 0; i < 4; i++) limiter.recordFailure('203.0.113.9');
    clock.advance(30_000);
    limiter.reconfigure({ windowMs: 600_000 });
    clock.advance(35_000);
    expect(limiter.check('203.0.113.9')).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.recordFailure('203.0.113.9')).toMatchObject({
      allowed: false,
      reason: 'locked',
      retryAfterMs: 300_000,
    });
  });

  it('a failure that had expired when the window widened never counts again', () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ maxAttempts: 3, clock, timers: clock });
    limiter.recordFailure('203.0.113.10');
    clock.advance(50_000);
    limiter.recordFailure('203.0.113.10');
    clock.advance(20_000);
    // The first failure is 70 s old: expired under the 60 s window, though not read since.
    limiter.reconfigure({ windowMs: 600_000 });
    expect(limiter.check('203.0.113.10')).toMatchObject({ remaining: 2, resetMs: 580_000 });
  });

  it('failures of a loopback-exempt client are not recorded: turning the exemption off starts it at 0', () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ maxAttempts: 3, clock, timers: clock });
    for (let i = 0; i < 20; i++)
      expect(limiter.recordFailure('127.0.0.1')).toMatchObject({ allowed: true, reason: 'exempt' });
    expect(limiter.size()).toBe(0);
    limiter.reconfigure({ exemptLoopback: false });
    expect(limiter.check('127.0.0.1')).toMatchObject({
      allowed: true,
      reason: 'allowed',
      remaining: 3,
    });
    limiter.recordFailure('127.0.0.1');
    expect(limiter.check('127.0.0.1')).toMatchObject({ remaining: 2 });
  });
});
