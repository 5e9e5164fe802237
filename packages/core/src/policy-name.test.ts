import { describe, expect, it } from 'vitest';
import type { RawRequest } from './client.js';
import type { Decision } from './decision.js';
import { PortcullisConfigError } from './errors.js';
import { rateLimitHeaders } from './headers.js';
import { createRequestGate, type RequestResult } from './http/request-gate.js';
import { manualClock } from './testing/manual-clock.js';
import { createWindowLimiter } from './window-limiter.js';

const raw = (ip: string): RawRequest => ({ socket: { remoteAddress: ip }, headers: {} });

const allowed: Decision = {
  allowed: true,
  reason: 'allowed',
  limit: 5,
  remaining: 4,
  retryAfterMs: 0,
  resetMs: 60_000,
  key: 'k',
};

const WHY =
  "cannot be advertised: a name goes into the RateLimit-Policy and RateLimit header fields as an RFC 9651 string, so it may hold only printable ASCII (space to \"~\") other than '\"' and '\\' ";

/** The gate a window limiter named `name` is mounted in, as `rateLimit({ limiter })` builds it. */
function gateAround(name: string) {
  const clock = manualClock(0);
  return createRequestGate({
    limiter: createWindowLimiter({ name, limit: 5, clock, timers: clock }),
  });
}

describe('policy names are valid RFC 9651 strings', () => {
  it('refuses, at construction, a limiter name that would forge an extra policy in RateLimit-Policy', () => {
    const name = 'x", "evil";q=1000000;w=1';
    expect(() => gateAround(name)).toThrow(PortcullisConfigError);
    expect(() => gateAround(name)).toThrow(
      expect.objectContaining({
        code: 'ERR_PORTCULLIS_NAME',
        option: 'name',
        message: `Portcullis: the policy name "x\\", \\"evil\\";q=1000000;w=1" ${WHY}(found U+0022 (") at index 1)`,
      }),
    );
  });

  it.each([
    [
      'a CR/LF (Node refuses the header value: every response a 500)',
      'api\r\nSet-Cookie: a=b',
      'U+000D at index 3',
    ],
    ['a lone LF', 'api\n', 'U+000A at index 3'],
    ['a backslash (an escape the name never meant)', 'a\\b', 'U+005C (\\) at index 1'],
    ['a tab', 'a\tb', 'U+0009 at index 1'],
    ['DEL', 'a\x7f', 'U+007F at index 1'],
    ['a non-ASCII letter', 'connexion-élevée', 'U+00E9 at index 10'],
  ])('refuses a limiter name with %s', (_label, name, found) => {
    expect(() => gateAround(name)).toThrow(
      expect.objectContaining({
        code: 'ERR_PORTCULLIS_NAME',
        message: `Portcullis: the policy name ${JSON.stringify(name)} ${WHY}(found ${found})`,
      }),
    );
  });

  it('refuses it when the window limiter is made, before any gate advertises it', () => {
    expect(() => createWindowLimiter({ name: 'x", "evil";q=1000000;w=1' })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_NAME', option: 'name' }),
    );
    expect(() => createWindowLimiter({ name: 'api\r\n' })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_NAME', option: 'name' }),
    );
    expect(createWindowLimiter({ name: 'plan: pro (2024)' }).name).toBe('plan: pro (2024)');
  });

  it('refuses a bad name in rateLimitHeaders instead of writing a forged or broken field', () => {
    expect(() => rateLimitHeaders(allowed, { windowMs: 60_000, name: 'a"b' })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_NAME' }),
    );
  });

  it('keeps every name that was valid byte-identical: spaces, punctuation and the empty string', async () => {
    expect(rateLimitHeaders(allowed, { windowMs: 60_000, name: 'api v1: login/%~' })).toEqual({
      'RateLimit-Policy': '"api v1: login/%~";q=5;w=60',
      RateLimit: '"api v1: login/%~";r=4;t=60',
    });
    expect(rateLimitHeaders(allowed, { windowMs: 60_000, name: '' })).toEqual({
      'RateLimit-Policy': '"";q=5;w=60',
      RateLimit: '"";r=4;t=60',
    });
    const gate = gateAround('api v1');
    expect((gate.run(raw('203.0.113.1'), {}) as RequestResult).headers).toEqual({
      'RateLimit-Policy': '"api v1";q=5;w=60',
      RateLimit: '"api v1";r=4;t=60',
    });
    await gate.close();
  });

  it('stacks a passed limiter with a spaced name beside a named rateLimit as two list members', async () => {
    const clock = manualClock(0);
    const first = createRequestGate({
      limiter: createWindowLimiter({ name: 'per user', limit: 5, clock, timers: clock }),
    });
    const second = createRequestGate({
      name: 'daily',
      limit: 100,
      windowMs: 86_400_000,
      clock,
      timers: clock,
    });
    const request = raw('203.0.113.2');
    await first.run(request, {});
    expect((second.run(request, {}) as RequestResult).headers).toEqual({
      'RateLimit-Policy': '"per user";q=5;w=60, "daily";q=100;w=86400',
      RateLimit: '"per user";r=4;t=60, "daily";r=99;t=86400',
    });
    await first.close();
    await second.close();
  });
});
