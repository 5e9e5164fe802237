/*
 * Hostile headers against client identity and the auth gate: 10 000 random X-Forwarded-For,
 * Forwarded, X-Real-IP and Origin values (plus repeated and array forms). Nothing may throw, and no
 * request may land in a bucket other than its sender's own or a stricter aggregate.
 */
import {
  authSubject,
  isLoopback,
  normalizeIp,
  type RawRequest,
  resolveClient,
} from '@portcullis/core';
import { createAuthGate, type GateResult } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const RUNS = 10_000;

/** Address spellings an attacker tries: valid, mapped, bracketed, ported, and junk. */
const address = fc.oneof(
  fc.ipV4(),
  fc.ipV6(),
  fc.ipV4().map((ip) => `::ffff:${ip}`),
  fc.ipV6().map((ip) => `[${ip}]:443`),
  fc.ipV4().map((ip) => `${ip}:8080`),
  fc.constantFrom(
    '127.0.0.1',
    '::1',
    '[::1]',
    '127.1',
    '0x7f.0.0.1',
    '0177.0.0.1',
    '::ffff:7f00:1',
    '10.0.0.9',
    'unknown',
    '_hidden',
    '',
    ' ',
    'localhost',
  ),
  fc.string({ maxLength: 40 }),
);

const hopList = fc
  .tuple(fc.array(address, { maxLength: 6 }), fc.constantFrom(',', ', ', ' ,', ',,'))
  .map(([hops, separator]) => hops.join(separator));

const origin = fc.oneof(
  fc.webUrl().map((u) => new URL(u).origin),
  fc.constantFrom(
    'null',
    'chrome-extension://abcdefghijklmnop',
    'http://localhost:5173',
    'https://a.example, https://b.example',
    'file://',
    'javascript:alert(1)',
    `https://${'a'.repeat(3000)}.example`,
  ),
  fc.domain().map((d) => `https://${d}`),
  fc.string({ maxLength: 80 }),
);

const headerValue = <T extends string>(gen: fc.Arbitrary<T>) =>
  fc.oneof(gen, fc.array(gen, { minLength: 1, maxLength: 3 }));

const hostileHeaders = fc.record(
  {
    'x-forwarded-for': headerValue(hopList),
    forwarded: headerValue(
      fc.oneof(
        address.map((a) => `for=${a}`),
        address.map((a) => `for="${a}";proto=https`),
      ),
    ),
    'x-real-ip': headerValue(address),
    'x-forwarded-host': fc.domain(),
    origin: headerValue(origin),
  },
  { requiredKeys: [] },
);

type Headers = Record<string, string | string[]>;

function request(peer: string | undefined, headers: Headers): RawRequest {
  const rawHeaders: string[] = [];
  for (const [name, value] of Object.entries(headers))
    for (const v of Array.isArray(value) ? value : [value]) rawHeaders.push(name, v);
  // Node joins repeated headers with ", " (set-cookie aside); a fuzzer may also hand arrays.
  return { socket: { remoteAddress: peer }, headers, rawHeaders };
}

const PROXY = '10.0.0.50';
const trusted = { trustedProxies: ['10.0.0.0/8'], allowRealIpFallback: true };

describe('fuzz: client identity', () => {
  it('an untrusted peer is always the client, whatever it writes', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), hostileHeaders, (peer, headers) => {
        const canonical = normalizeIp(peer) as string;
        const client = resolveClient(request(peer, headers), trusted);
        const behindProxy = client.proxied;
        if (!behindProxy) expect(client.ip).toBe(canonical);
        if (client.directLocal) {
          expect(isLoopback(canonical)).toBe(true);
          expect(headers.origin).toBeUndefined();
        }
      }),
      { numRuns: RUNS / 4 },
    );
  });

  it('behind a trusted proxy the client is a canonical, non-loopback address or unresolved', () => {
    fc.assert(
      fc.property(hostileHeaders, (headers) => {
        const client = resolveClient(request(PROXY, headers), trusted);
        expect(client.proxied).toBe(true);
        expect(client.directLocal).toBe(false);
        if (client.ip !== undefined) {
          expect(normalizeIp(client.ip)).toBe(client.ip);
          expect(isLoopback(client.ip)).toBe(false);
          expect(client.ip.startsWith('10.')).toBe(false);
        }
        const subject = authSubject(client);
        expect(subject.exempt).toBe(false);
        expect(subject.key.startsWith('browser-origin:')).toBe(false);
      }),
      { numRuns: RUNS / 4 },
    );
  });

  it('junk socket addresses and header shapes never throw', () => {
    fc.assert(
      fc.property(fc.option(address, { nil: undefined }), hostileHeaders, (peer, headers) => {
        const client = resolveClient(request(peer, headers), trusted);
        const subject = authSubject(client);
        expect(typeof subject.key).toBe('string');
        expect(subject.key.length).toBeLessThanOrEqual(2100);
      }),
      { numRuns: RUNS / 4 },
    );
  });
});

describe('fuzz: the auth gate', () => {
  it('a remote attacker gets at most 2 × maxAttempts wrong guesses answered, whatever it sends', () => {
    const clock = manualClock(0);
    const gate = createAuthGate<{ token: string }>({
      verify: (r) => (r.token === 'right' ? 'ok' : 'invalid'),
      maxAttempts: 5,
      clock,
      timers: clock,
      trustedProxies: ['10.0.0.0/8'],
    });
    let answered401 = 0;
    fc.assert(
      fc.property(hostileHeaders, (headers) => {
        const r = gate.run(request('203.0.113.9', headers), { token: 'guess' }) as GateResult;
        expect(r.ok).toBe(false);
        if (!r.ok) {
          expect([401, 429]).toContain(r.answer.status);
          if (r.answer.status === 401) answered401++;
        }
      }),
      { numRuns: RUNS / 8 },
    );
    // Its own bucket in the main limiter and one in the browser limiter (requests with Origin).
    expect(answered401).toBeLessThanOrEqual(10);
  });

  it('a local page gets at most 3 × maxAttempts wrong guesses answered across every origin it mints', () => {
    const clock = manualClock(0);
    const gate = createAuthGate<{ token: string }>({
      verify: (r) => (r.token === 'right' ? 'ok' : 'invalid'),
      maxAttempts: 5,
      clock,
      timers: clock,
    });
    let answered401 = 0;
    fc.assert(
      fc.property(headerValue(origin), (o) => {
        const r = gate.run(request('127.0.0.1', { origin: o }), { token: 'guess' }) as GateResult;
        if (!r.ok && r.answer.status === 401) answered401++;
      }),
      { numRuns: RUNS / 8 },
    );
    expect(answered401).toBeLessThanOrEqual(15);
  });
});
