import type { RequestGateOptions } from '@portcullis/core/adapter';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AnyRequest, type App, frameworks, json, limitHeaders } from './harness.js';
import { LaggingStore } from './stores.js';

const T0 = 1_000_000;
const JSON_TYPE = 'application/json; charset=utf-8';
const PROXY = ['127.0.0.1'];

describe.each(frameworks)('rateLimit — $name', (fw) => {
  let app: App | undefined;
  let clock: ManualClock;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  /** 3 requests per minute; the suite's client is named by X-Forwarded-For through a trusted 127.0.0.1. */
  async function start(extra: Partial<RequestGateOptions<AnyRequest>> = {}): Promise<App> {
    clock = manualClock(T0);
    app = await fw.build({
      rateLimit: {
        limit: 3,
        windowMs: 60_000,
        clock,
        timers: clock,
        trustedProxies: PROXY,
        ...extra,
      },
    });
    return app;
  }
  const from = (ip: string, headers: Record<string, string> = {}) =>
    app!.send({ path: '/limited', headers: { 'x-forwarded-for': ip, ...headers } });
  const burst = async (ip: string, n: number) => {
    for (let i = 0; i < n; i++) expect((await from(ip)).status).toBe(200);
  };

  it('passes the first request with the IETF fields and hands the decision to the handler', async () => {
    await start();
    const reply = await from('203.0.113.7');
    expect(reply.status).toBe(200);
    expect(limitHeaders(reply)).toEqual({
      'ratelimit-policy': '"default";q=3;w=60',
      ratelimit: '"default";r=2;t=60',
      'content-type': JSON_TYPE,
    });
    expect(json(reply)).toEqual({
      decision: {
        allowed: true,
        reason: 'allowed',
        limit: 3,
        remaining: 2,
        retryAfterMs: 0,
        resetMs: 60_000,
        key: '203.0.113.7',
      },
    });
  });

  it('refuses limit + 1 with 429, the exact headers and the exact JSON body', async () => {
    await start();
    await burst('203.0.113.7', 3);
    clock.advance(1_500);
    const reply = await from('203.0.113.7');
    expect(reply.status).toBe(429);
    expect(limitHeaders(reply)).toEqual({
      'ratelimit-policy': '"default";q=3;w=60',
      ratelimit: '"default";r=0;t=59',
      'retry-after': '59',
      'content-type': JSON_TYPE,
    });
    expect(reply.text).toBe(
      '{"code":"RATE_LIMITED","message":"too many requests; retry after 59s","retryable":true,"retryAfterMs":58500}',
    );
  });

  it('reopens the window exactly at reset (refused requests are free)', async () => {
    await start();
    await burst('203.0.113.7', 3);
    clock.set(T0 + 59_999);
    const last = await from('203.0.113.7');
    expect(last.status).toBe(429);
    expect(last.headers['retry-after']).toBe('1');
    expect(json(last)).toMatchObject({ retryAfterMs: 1 });
    clock.set(T0 + 60_000);
    const reopened = await from('203.0.113.7');
    expect(reopened.status).toBe(200);
    expect(reopened.headers.ratelimit).toBe('"default";r=2;t=60');
    await burst('203.0.113.7', 2);
    expect((await from('203.0.113.7')).status).toBe(429);
  });

  it.each([
    ['default', undefined],
    ['true', true],
    ['"ietf"', 'ietf'],
  ] as const)('headers: %s sends the IETF fields only', async (_label, headers) => {
    await start(headers === undefined ? {} : { headers });
    expect(limitHeaders(await from('203.0.113.7'))).toEqual({
      'ratelimit-policy': '"default";q=3;w=60',
      ratelimit: '"default";r=2;t=60',
      'content-type': JSON_TYPE,
    });
  });

  it('headers: "legacy" adds X-RateLimit-Limit/Remaining/Reset', async () => {
    await start({ headers: 'legacy' });
    expect(limitHeaders(await from('203.0.113.7'))).toEqual({
      'ratelimit-policy': '"default";q=3;w=60',
      ratelimit: '"default";r=2;t=60',
      'x-ratelimit-limit': '3',
      'x-ratelimit-remaining': '2',
      'x-ratelimit-reset': '60',
      'content-type': JSON_TYPE,
    });
    await burst('203.0.113.7', 2);
    clock.advance(10_000);
    expect(limitHeaders(await from('203.0.113.7'))).toEqual({
      'ratelimit-policy': '"default";q=3;w=60',
      ratelimit: '"default";r=0;t=50',
      'x-ratelimit-limit': '3',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '50',
      'retry-after': '50',
      'content-type': JSON_TYPE,
    });
  });

  it('headers: false sends no counters, but a refusal still carries Retry-After', async () => {
    await start({ headers: false });
    expect(limitHeaders(await from('203.0.113.7'))).toEqual({ 'content-type': JSON_TYPE });
    await burst('203.0.113.7', 2);
    const refused = await from('203.0.113.7');
    expect(refused.status).toBe(429);
    expect(limitHeaders(refused)).toEqual({ 'retry-after': '60', 'content-type': JSON_TYPE });
  });

  it('names the policy after `name`', async () => {
    await start({ name: 'api' });
    const reply = await from('203.0.113.7');
    expect(reply.headers['ratelimit-policy']).toBe('"api";q=3;w=60');
    expect(reply.headers.ratelimit).toBe('"api";r=2;t=60');
  });

  it('keeps one bucket per client', async () => {
    await start();
    await burst('203.0.113.7', 3);
    expect((await from('203.0.113.7')).status).toBe(429);
    const other = await from('198.51.100.20');
    expect(other.status).toBe(200);
    expect(other.headers.ratelimit).toBe('"default";r=2;t=60');
  });

  it('keys a client behind trusted proxies by the right-most untrusted X-Forwarded-For hop', async () => {
    await start({ trustedProxies: ['127.0.0.1', '10.0.0.0/8'] });
    const keyOf = async (xff: string) =>
      (json(await from(xff)) as { decision: { key: string } }).decision.key;
    expect(await keyOf('198.51.100.9, 10.1.2.3')).toBe('198.51.100.9');
    expect(await keyOf('6.6.6.6, 198.51.100.9, 10.200.0.1')).toBe('198.51.100.9');
    expect(json(await from('1.2.3.4, 198.51.100.9'))).toMatchObject({
      decision: { key: '198.51.100.9', remaining: 0 },
    });
    expect((await from('198.51.100.9, 10.0.0.7')).status).toBe(429);
  });

  it('leaves a client whose hops are all trusted or malformed unresolved, in the shared `unknown` bucket', async () => {
    await start({ trustedProxies: ['127.0.0.1', '10.0.0.0/8'] });
    const first = await from('10.0.0.1');
    expect(json(first)).toMatchObject({ decision: { key: 'unknown', remaining: 2 } });
    expect(json(await from('not-an-ip'))).toMatchObject({
      decision: { key: 'unknown', remaining: 1 },
    });
    expect(json(await app!.send({ path: '/limited' }))).toMatchObject({
      decision: { key: 'unknown', remaining: 0 },
    });
    expect((await from('0x7f.0.0.1')).status).toBe(429);
  });

  it('ignores X-Forwarded-For from an untrusted peer and warns once', async () => {
    const logger = { warn: vi.fn(), error: vi.fn() };
    await start({ trustedProxies: [], logger });
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      expect(json(await from(ip))).toMatchObject({ decision: { key: '127.0.0.1' } });
    }
    expect((await from('203.0.113.4')).status).toBe(429);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY' },
      expect.stringContaining('trustedProxies'),
    );
  });

  it('keys IPv6 clients by their /64 (ipv6Subnet), IPv4-mapped ones as IPv4', async () => {
    await start();
    const keyOf = async (xff: string) =>
      (json(await from(xff)) as { decision: { key: string } }).decision.key;
    expect(await keyOf('2001:DB8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(await keyOf('[2001:db8:1:2:ffff::9]:443')).toBe('2001:db8:1:2::/64');
    expect(await keyOf('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(json(await from('2001:db8:1:2:aaaa::1'))).toMatchObject({ decision: { remaining: 0 } });
    expect((await from('2001:db8:1:2:bbbb::1')).status).toBe(429);
    expect((await from('2001:db8:1:3::1')).status).toBe(200);
    await app!.close();
    await start({ ipv6Subnet: false });
    expect(await keyOf('2001:db8:1:2::1')).toBe('2001:db8:1:2::1');
  });

  it('ipv6Networks: a client rotating through its /56 is held to 4 clients’ budget', async () => {
    await start({ ipv6Networks: true });
    // 3 per /64; the /56 2001:db8:7:100::/56 has 12, the /48 48.
    for (let n = 0; n < 12; n++) {
      const reply = await from(`2001:db8:7:1${n.toString(16).padStart(2, '0')}::1`);
      expect(reply.status).toBe(200);
    }
    const refused = await from('2001:db8:7:1ff::1');
    expect(refused.status).toBe(429);
    expect(limitHeaders(refused)).toEqual({
      'ratelimit-policy': '"default";q=3;w=60, "default-ipv6-56";q=12;w=60',
      ratelimit: '"default";r=2;t=60, "default-ipv6-56";r=0;t=60',
      'retry-after': '60',
      'content-type': JSON_TYPE,
    });
    const ok = await from('2001:db8:7:200::1');
    expect(limitHeaders(ok)).toMatchObject({
      'ratelimit-policy':
        '"default";q=3;w=60, "default-ipv6-56";q=12;w=60, "default-ipv6-48";q=48;w=60',
      ratelimit: '"default";r=2;t=60, "default-ipv6-56";r=11;t=60, "default-ipv6-48";r=35;t=60',
    });
    // NAT64 clients are the IPv4 clients they carry: each its own budget, no network.
    const nat64 = await from('64:ff9b::203.0.113.9');
    expect(json(nat64)).toMatchObject({ decision: { key: '203.0.113.9', remaining: 2 } });
    expect(limitHeaders(nat64)['ratelimit-policy']).toBe('"default";q=3;w=60');
  });

  describe.each([
    ['synchronous', <T>(v: T) => v],
    ['asynchronous', <T>(v: T) => Promise.resolve(v)],
  ] as const)('%s callbacks', (_label, wrap) => {
    it('skip: a skipped request is not counted and gets no headers', async () => {
      await start({ skip: (req) => wrap(req.headers['x-skip'] === 'yes') });
      for (let i = 0; i < 5; i++) {
        const skipped = await from('203.0.113.7', { 'x-skip': 'yes' });
        expect(skipped.status).toBe(200);
        expect(limitHeaders(skipped)).toEqual({ 'content-type': JSON_TYPE });
        expect(json(skipped)).toEqual({ decision: null });
      }
      await burst('203.0.113.7', 3);
      expect((await from('203.0.113.7')).status).toBe(429);
    });

    it('cost: a request spends what the function says', async () => {
      await start({ cost: (req) => wrap(Number(req.headers['x-cost'] ?? '1')) });
      expect((await from('203.0.113.7', { 'x-cost': '2' })).headers.ratelimit).toBe(
        '"default";r=1;t=60',
      );
      const refused = await from('203.0.113.7', { 'x-cost': '2' });
      expect(refused.status).toBe(429);
      expect(refused.headers.ratelimit).toBe('"default";r=1;t=60');
      expect((await from('203.0.113.7')).headers.ratelimit).toBe('"default";r=0;t=60');
    });

    it('key: the bucket is what the function says', async () => {
      await start({ key: (req) => wrap(`user:${String(req.headers['x-user'])}`) });
      expect(json(await from('203.0.113.7', { 'x-user': 'alice' }))).toMatchObject({
        decision: { key: 'user:alice' },
      });
      await from('198.51.100.1', { 'x-user': 'alice' });
      await from('198.51.100.2', { 'x-user': 'alice' });
      expect((await from('198.51.100.3', { 'x-user': 'alice' })).status).toBe(429);
      expect((await from('203.0.113.7', { 'x-user': 'bob' })).status).toBe(200);
    });
  });

  it('cost: a fixed number', async () => {
    await start({ cost: 3 });
    expect((await from('203.0.113.7')).headers.ratelimit).toBe('"default";r=0;t=60');
    expect((await from('203.0.113.7')).status).toBe(429);
  });

  it('dryRun never refuses but reports the would-be refusal in headers and the decision', async () => {
    await start({ dryRun: true });
    await burst('203.0.113.7', 3);
    for (let i = 0; i < 3; i++) {
      const reply = await from('203.0.113.7');
      expect(reply.status).toBe(200);
      expect(limitHeaders(reply)).toEqual({
        'ratelimit-policy': '"default";q=3;w=60',
        ratelimit: '"default";r=0;t=60',
        'content-type': JSON_TYPE,
      });
      expect(json(reply)).toEqual({
        decision: {
          allowed: true,
          reason: 'limited',
          limit: 3,
          remaining: 0,
          retryAfterMs: 0,
          resetMs: 60_000,
          key: '203.0.113.7',
          dryRun: true,
        },
      });
    }
  });

  it.each([
    // sliding: the first minute's 3 weigh on the next until 20 s into it; bucket: one token per 20 s
    ['sliding-window', '"default";r=2;t=120', '"default";r=0;t=120', '80'],
    ['token-bucket', '"default";r=2;t=20', '"default";r=0;t=60', '20'],
  ] as const)(
    'algorithm %s: limit + 1 is refused with its own retry time',
    async (algorithm, first, ratelimit, retryAfter) => {
      await start({ algorithm });
      expect((await from('203.0.113.7')).headers.ratelimit).toBe(first);
      await burst('203.0.113.7', 2);
      const refused = await from('203.0.113.7');
      expect(refused.status).toBe(429);
      expect(refused.headers.ratelimit).toBe(ratelimit);
      expect(refused.headers['retry-after']).toBe(retryAfter);
    },
  );

  it('answers the same through a store that answers later (the promise path)', async () => {
    const lagging = manualClock(T0);
    clock = lagging;
    app = await fw.build({
      rateLimit: {
        limit: 3,
        windowMs: 60_000,
        store: new LaggingStore(lagging),
        trustedProxies: PROXY,
      },
    });
    await burst('203.0.113.7', 3);
    lagging.advance(1_500);
    const refused = await from('203.0.113.7');
    expect(refused.status).toBe(429);
    expect(limitHeaders(refused)).toEqual({
      'ratelimit-policy': '"default";q=3;w=60',
      ratelimit: '"default";r=0;t=59',
      'retry-after': '59',
      'content-type': JSON_TYPE,
    });
    expect(json(refused)).toEqual({
      code: 'RATE_LIMITED',
      message: 'too many requests; retry after 59s',
      retryable: true,
      retryAfterMs: 58_500,
    });
  });
});
