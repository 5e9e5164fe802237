import { describe, expect, it } from 'vitest';
import type { Decision } from './decision.js';
import {
  authRateLimitedError,
  methodRateLimitedError,
  retryAfterSeconds,
  sessionRateLimitMessage,
} from './error-shapes.js';
import { createHeaderWriter, rateLimitHeaders } from './headers.js';
import { presets } from './presets.js';

describe('error shapes, byte for byte', () => {
  it('authRateLimitedError', () => {
    expect(JSON.stringify(authRateLimitedError(297_000))).toBe(
      '{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)",' +
        '"retryable":true,"retryAfterMs":297000,"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited",' +
        '"recommendedNextStep":"wait_then_retry"}}',
    );
  });

  it('methodRateLimitedError', () => {
    expect(
      JSON.stringify(
        methodRateLimitedError('config.patch', 34_539, { limit: 30, windowMs: 60_000 }),
      ),
    ).toBe(
      '{"code":"UNAVAILABLE","message":"rate limit exceeded for config.patch; retry after 35s","retryable":true,' +
        '"retryAfterMs":34539,"details":{"method":"config.patch","limit":"30 per 60s"}}',
    );
    expect(methodRateLimitedError('m', 50_000, { limit: 30, windowMs: 60_000 }).message).toBe(
      'rate limit exceeded for m; retry after 50s',
    );
  });

  it('sessionRateLimitMessage and Retry-After seconds', () => {
    expect(sessionRateLimitMessage('session/new', 4_001)).toBe(
      'ACP session creation rate limit exceeded for session/new; retry after 5s.',
    );
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
    expect(retryAfterSeconds(300_000)).toBe(300);
  });
});

describe('rateLimitHeaders', () => {
  const allowed: Decision = {
    allowed: true,
    reason: 'allowed',
    limit: 100,
    remaining: 42,
    retryAfterMs: 0,
    resetMs: 30_500,
    key: 'k',
  };
  const refused: Decision = {
    allowed: false,
    reason: 'limited',
    limit: 100,
    remaining: 0,
    retryAfterMs: 12_001,
    resetMs: 12_001,
    key: 'k',
  };

  it('IETF fields by default', () => {
    expect(rateLimitHeaders(allowed, { windowMs: 60_000 })).toEqual({
      'RateLimit-Policy': '"default";q=100;w=60',
      RateLimit: '"default";r=42;t=31',
    });
    expect(rateLimitHeaders(refused, { windowMs: 60_000, name: 'api' })).toEqual({
      'RateLimit-Policy': '"api";q=100;w=60',
      RateLimit: '"api";r=0;t=13',
      'Retry-After': '13',
    });
  });

  it('legacy adds X-RateLimit-*; false sends only Retry-After', () => {
    expect(rateLimitHeaders(allowed, { windowMs: 60_000, mode: 'legacy' })).toEqual({
      'RateLimit-Policy': '"default";q=100;w=60',
      RateLimit: '"default";r=42;t=31',
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': '42',
      'X-RateLimit-Reset': '31',
    });
    expect(rateLimitHeaders(allowed, { windowMs: 60_000, mode: false })).toEqual({});
    expect(rateLimitHeaders(refused, { windowMs: 60_000, mode: false })).toEqual({
      'Retry-After': '13',
    });
  });

  it('gives every caller of rateLimitHeaders a record of its own to add to', () => {
    const mine = rateLimitHeaders(allowed, { windowMs: 60_000, mode: false });
    mine['Cache-Control'] = 'no-store';
    expect(rateLimitHeaders(allowed, { windowMs: 60_000, mode: false })).toEqual({});
    expect(createHeaderWriter({ windowMs: 60_000, mode: false })(allowed)).toEqual({});
  });

  it('a reused writer follows each decision, in a stable header order', () => {
    const write = createHeaderWriter({ windowMs: 60_000, mode: 'legacy' });
    expect(Object.keys(write(refused))).toEqual([
      'RateLimit-Policy',
      'RateLimit',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'Retry-After',
    ]);
    const ietf = createHeaderWriter({ windowMs: 60_000 });
    for (const limit of [100, 7, 7, 100]) {
      expect(ietf({ ...allowed, limit })['RateLimit-Policy']).toBe(`"default";q=${limit};w=60`);
    }
    expect(ietf(allowed)).not.toBe(ietf(allowed));
  });
});

describe('presets', () => {
  it('hold the gateway numbers and cannot be changed', () => {
    expect(presets.gatewayAuth).toEqual({
      maxAttempts: 10,
      windowMs: 60_000,
      lockoutMs: 300_000,
      exemptLoopback: true,
    });
    expect(presets.webhookAuth).toEqual({
      maxAttempts: 20,
      windowMs: 60_000,
      lockoutMs: 60_000,
      exemptLoopback: false,
    });
    expect(presets.controlPlaneWrites).toEqual({ limit: 30, windowMs: 60_000 });
    expect(presets.sessionCreation).toEqual({ limit: 120, windowMs: 10_000 });
    expect(presets.restart).toMatchObject({ cooldownMs: 30_000 });
    expect(Object.isFrozen(presets.gatewayAuth)).toBe(true);
  });
});
