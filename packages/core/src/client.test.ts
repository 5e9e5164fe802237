import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  compileClientRules,
  createClientResolver,
  peerCache,
  type RawRequest,
  resolveClient,
} from './client.js';
import { formatIp, normalizeIp } from './ip.js';
import { authSubject } from './subject.js';

function req(
  remoteAddress: string | undefined,
  headers: Record<string, string | string[]> = {},
  rawHeaders?: string[],
): RawRequest {
  return { socket: { remoteAddress }, headers, ...(rawHeaders && { rawHeaders }) };
}

const proxy = { trustedProxies: ['10.0.0.1', '10.1.0.0/16', '2001:db8:ffff::/48'] };

describe('resolveClient', () => {
  it('an untrusted peer is the client; its forwarding headers are ignored', () => {
    expect(
      resolveClient(req('203.0.113.5', { 'x-forwarded-for': '1.1.1.1' }), {
        logger: { warn: vi.fn() },
      }),
    ).toEqual({
      ip: '203.0.113.5',
      directLocal: false,
      proxied: false,
      origin: undefined,
    });
    expect(resolveClient(req('::ffff:203.0.113.5'))).toMatchObject({ ip: '203.0.113.5' });
  });

  it('resolves every peer right through the bounded cache of parsed addresses', () => {
    peerCache.clear();
    const v4 = (i: number) => `10.99.${(i >> 8) & 255}.${i & 255}`;
    const v6 = (i: number) =>
      `2001:db8:${((i >> 8) + 1).toString(16)}:${((i & 255) + 1).toString(16)}::1`;
    // 4 096 fill the cache; the 904 new ones after are resolved and not kept.
    for (let i = 0; i < 5000; i++) expect(resolveClient(req(v4(i))).ip).toBe(v4(i));
    expect(peerCache.size()).toBe(4096);
    expect([peerCache.has(v4(0)), peerCache.has(v4(4095)), peerCache.has(v4(4096))]).toEqual([
      true,
      true,
      false,
    ]);
    // Neither a mapped IPv4 spelling (every client of a dual-stack server) nor an IPv6 one empties
    // a full cache; an address met again is a hit, not a new one.
    const mapped = (i: number) => `::ffff:${v4(i)}`;
    for (let i = 0; i < 8; i++) expect(resolveClient(req(mapped(i))).ip).toBe(v4(i));
    expect(resolveClient(req('2001:db8::7')).ip).toBe('2001:db8::7');
    for (let i = 0; i < 100; i++) expect(resolveClient(req(v4(7))).ip).toBe(v4(7));
    expect([peerCache.size(), peerCache.has(mapped(0)), peerCache.has(v4(7))]).toEqual([
      4096,
      false,
      true,
    ]);
    // What a flood put in first does not hold the cache for good: the 16 × 4 096th new address
    // since it was full empties it, and is the first kept again (913 new ones so far).
    for (let i = 0; i < 16 * 4096 - 913 - 1; i++) expect(resolveClient(req(v6(i))).ip).toBe(v6(i));
    expect([peerCache.size(), peerCache.has(v4(0))]).toEqual([4096, true]);
    expect(resolveClient(req(v6(70_000))).ip).toBe(v6(70_000));
    expect([peerCache.size(), peerCache.has(v6(70_000)), peerCache.has(v4(0))]).toEqual([
      1,
      true,
      false,
    ]);
    expect(resolveClient(req('127.0.0.9'))).toMatchObject({ ip: '127.0.0.9', directLocal: true });
    expect(resolveClient(req('::1')).directLocal).toBe(true);
    // Junk is no address, however long, cached or not; an over-long text is never kept.
    expect(resolveClient(req('x'.repeat(100_000))).ip).toBeUndefined();
    expect(resolveClient(req('x'.repeat(100_000))).ip).toBeUndefined();
    expect(resolveClient(req('not-an-ip')).ip).toBeUndefined();
    expect(resolveClient(req('not-an-ip')).ip).toBeUndefined();
    peerCache.clear();
    resolveClient(req('x'.repeat(65)));
    resolveClient(req('not-an-ip'));
    expect([peerCache.size(), peerCache.has('not-an-ip')]).toEqual([1, true]);
  });

  it('behind a trusted proxy the right-most untrusted hop is the client', () => {
    const r = createClientResolver(proxy);
    expect(r(req('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, 203.0.113.9' }))).toEqual({
      ip: '203.0.113.9',
      directLocal: false,
      proxied: true,
      origin: undefined,
    });
    expect(
      r(req('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, 203.0.113.9, 10.1.2.3' })).ip,
    ).toBe('203.0.113.9');
    expect(r(req('10.0.0.1', { 'x-forwarded-for': '[2001:db8::1]:443' })).ip).toBe('2001:db8::1');
    expect(r(req('10.0.0.1', { 'x-forwarded-for': '203.0.113.9:51234' })).ip).toBe('203.0.113.9');
    expect(r(req('10.0.0.1', { 'x-forwarded-for': 'garbage, 203.0.113.9' })).ip).toBe(
      '203.0.113.9',
    );
  });

  it('merges every X-Forwarded-For line in order', () => {
    const r = createClientResolver(proxy);
    const raw = [
      'X-Forwarded-For',
      '198.51.100.1',
      'Host',
      'x',
      'x-forwarded-for',
      '203.0.113.9, 10.1.0.7',
    ];
    expect(
      r(req('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, 203.0.113.9, 10.1.0.7' }, raw)).ip,
    ).toBe('203.0.113.9');
    expect(r(req('10.0.0.1', { 'x-forwarded-for': ['198.51.100.1', '203.0.113.10'] })).ip).toBe(
      '203.0.113.10',
    );
  });

  it('fails closed: malformed walked hops, all-trusted chains and missing headers are unresolved', () => {
    const r = createClientResolver(proxy);
    for (const xff of [
      '203.0.113.9, garbage',
      '203.0.113.9,,10.1.0.1',
      '10.1.0.1, 10.0.0.1',
      '',
      ' ',
      '0x7f.0.0.1',
    ]) {
      expect(r(req('10.0.0.1', { 'x-forwarded-for': xff })), xff).toEqual({
        ip: undefined,
        directLocal: false,
        proxied: true,
        origin: undefined,
      });
    }
    expect(r(req('10.0.0.1')).ip).toBeUndefined();
    expect(r(req('10.0.0.1', { 'x-real-ip': '203.0.113.1' })).ip).toBeUndefined();
  });

  it('uses X-Real-IP only with allowRealIpFallback, and only without X-Forwarded-For', () => {
    const r = createClientResolver({ ...proxy, allowRealIpFallback: true });
    expect(r(req('10.0.0.1', { 'x-real-ip': '203.0.113.1' })).ip).toBe('203.0.113.1');
    expect(r(req('10.0.0.1', { 'x-real-ip': '10.1.0.9' })).ip).toBeUndefined();
    expect(r(req('10.0.0.1', { 'x-real-ip': 'nope' })).ip).toBeUndefined();
    expect(
      r(req('10.0.0.1', { 'x-forwarded-for': '198.51.100.3', 'x-real-ip': '203.0.113.1' })).ip,
    ).toBe('198.51.100.3');
    expect(r(req('203.0.113.50', { 'x-real-ip': '1.1.1.1' })).ip).toBe('203.0.113.50');
  });

  it('directLocal only for a clean loopback peer, and warns once about an untrusted loopback proxy', () => {
    const warn = vi.fn();
    const r = createClientResolver({ logger: { warn } });
    expect(r(req('127.0.0.1'))).toEqual({
      ip: '127.0.0.1',
      directLocal: true,
      proxied: false,
      origin: undefined,
    });
    expect(r(req('::1')).directLocal).toBe(true);
    expect(r(req('::ffff:127.0.0.1')).directLocal).toBe(true);
    expect(r(req('127.0.0.1', { origin: 'http://localhost:3000' }))).toEqual({
      ip: '127.0.0.1',
      directLocal: false,
      proxied: false,
      origin: 'http://localhost:3000',
    });
    for (const h of [
      'x-forwarded-for',
      'X-Forwarded-Host',
      'forwarded',
      'x-real-ip',
      'x-forwarded-proto',
    ]) {
      expect(r(req('127.0.0.1', { [h]: '1.2.3.4' })), h).toEqual({
        ip: '127.0.0.1',
        directLocal: false,
        proxied: false,
        origin: undefined,
      });
    }
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[1]).toContain('trustedProxies');
    const behindLocalProxy = createClientResolver({ trustedProxies: ['127.0.0.1'] });
    expect(behindLocalProxy(req('127.0.0.1')).directLocal).toBe(false);
    expect(behindLocalProxy(req('127.0.0.1', { 'x-forwarded-for': '127.0.0.1' }))).toMatchObject({
      ip: undefined,
      directLocal: false,
    });
  });

  it('keeps repeated Origin headers visibly repeated', () => {
    const raw = ['Origin', 'https://a.example', 'Origin', 'https://b.example'];
    expect(resolveClient(req('127.0.0.1', { origin: 'https://a.example' }, raw)).origin).toBe(
      'https://a.example, https://b.example',
    );
    expect(
      resolveClient(req('127.0.0.1', { origin: ['https://a.example', 'https://b.example'] }))
        .origin,
    ).toBe('https://a.example, https://b.example');
  });

  it('unresolved peers (no socket address) are unresolved', () => {
    expect(resolveClient({ headers: {} })).toEqual({
      ip: undefined,
      directLocal: false,
      proxied: false,
      origin: undefined,
    });
    expect(resolveClient(req('not-an-ip')).ip).toBeUndefined();
  });

  it.each([
    [true],
    [1],
    ['10.0.0.1'],
    [['0.0.0.0/0']],
    [['::/0']],
    [['10.0.0.0/33']],
    [['proxy.local']],
    [[1]],
  ])('rejects trustedProxies %j', (trustedProxies) => {
    expect(() => createClientResolver({ trustedProxies } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_TRUSTED_PROXIES', option: 'trustedProxies' }),
    );
  });

  it('fuzz: never throws, yields canonical IPs, never the trusted proxy itself', () => {
    const r = createClientResolver(proxy);
    const hop = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.constantFrom('10.0.0.1', '10.1.3.4', 'unknown', '', '[::1]:80', '1.2.3.4:5'),
      fc.string({ maxLength: 20 }),
    );
    fc.assert(
      fc.property(
        fc.oneof(fc.constant('10.0.0.1'), fc.ipV4(), fc.ipV6(), fc.string({ maxLength: 30 })),
        fc.array(
          fc.array(hop, { maxLength: 6 }).map((hops) => hops.join(', ')),
          { maxLength: 3 },
        ),
        fc.option(fc.string({ maxLength: 50 }), { nil: undefined }),
        (peer, lines, origin) => {
          const rawHeaders = lines.flatMap((l) => ['X-Forwarded-For', l]);
          if (origin !== undefined) rawHeaders.push('Origin', origin);
          const headers: Record<string, string> = {};
          if (lines.length > 0) headers['x-forwarded-for'] = lines.join(', ');
          if (origin !== undefined) headers.origin = origin;
          const client = r(req(peer, headers, rawHeaders));
          if (client.ip !== undefined) {
            expect(normalizeIp(client.ip)).toBe(client.ip);
            if (client.proxied)
              expect(['10.0.0.1'].includes(client.ip) || client.ip.startsWith('10.1.')).toBe(false);
          }
          const subject = authSubject(client);
          expect(typeof subject.key).toBe('string');
          if (subject.exempt) expect(client.directLocal).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['no trusted proxy', {}],
    ['a trusted proxy', proxy],
    ['a trusted proxy and X-Real-IP', { ...proxy, allowRealIpFallback: true }],
  ])('address() is resolve().ip, parsed and formatted, with %s', (_with, options) => {
    const hop = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.constantFrom('10.0.0.1', '10.1.3.4', '::ffff:10.0.0.1', '[::1]:80', '1.2.3.4:5', ''),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constantFrom('10.0.0.1', '127.0.0.1', '::1', '::ffff:127.0.0.1', undefined),
          fc.ipV4(),
          fc.ipV6(),
          fc.string({ maxLength: 20 }),
        ),
        fc.array(hop, { maxLength: 4 }).map((hops) => hops.join(', ')),
        fc.option(hop, { nil: undefined }),
        (peer, forwarded, realIp) => {
          const headers: Record<string, string> = {};
          if (forwarded !== '') headers['x-forwarded-for'] = forwarded;
          if (realIp !== undefined) headers['x-real-ip'] = realIp;
          const rules = compileClientRules({ ...options, logger: { warn: () => {} } });
          // Each path on a fresh socket object, so the per-socket cache cannot hide a difference.
          const viaAddress = rules.address(req(peer, headers));
          const viaResolve = rules.resolve(req(peer, headers)).ip;
          expect(viaAddress?.text).toBe(viaResolve);
          if (viaAddress !== undefined) expect(formatIp(viaAddress.ip)).toBe(viaAddress.text);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('address() gives the untrusted-loopback-proxy warning once, like resolve()', () => {
    const warn = vi.fn();
    const { address } = compileClientRules({ logger: { warn } });
    expect(address(req('127.0.0.1'))?.text).toBe('127.0.0.1');
    expect(warn).not.toHaveBeenCalled();
    expect(address(req('::1', { 'X-Forwarded-Host': 'example.com' }))?.text).toBe('::1');
    expect(address(req('127.0.0.1', { forwarded: 'for=1.2.3.4' }))?.text).toBe('127.0.0.1');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY' },
      expect.stringContaining('trustedProxies'),
    );
  });
});

describe('authSubject', () => {
  const r = createClientResolver({ trustedProxies: ['127.0.0.1'] });
  const plain = createClientResolver({ logger: { warn: () => {} } });

  it('exempts only clean direct-local clients, and only when asked', () => {
    expect(authSubject(plain(req('127.0.0.1')))).toEqual({ key: '127.0.0.1', exempt: true });
    expect(authSubject(plain(req('127.0.0.1')), { exemptLoopback: false })).toEqual({
      key: '127.0.0.1',
      exempt: false,
    });
    expect(authSubject(plain(req('127.0.0.1', { 'x-forwarded-for': '203.0.113.1' })))).toEqual({
      key: '127.0.0.1',
      exempt: false,
    });
    expect(authSubject(plain(req('203.0.113.1')))).toEqual({ key: '203.0.113.1', exempt: false });
  });

  it('keys browsers from loopback by origin and remote browsers by IP', () => {
    expect(authSubject(plain(req('127.0.0.1', { origin: 'HTTP://LOCALHOST:5173' })))).toEqual({
      key: 'browser-origin:http://localhost:5173',
      exempt: false,
    });
    expect(authSubject(plain(req('::1', { origin: 'null' })))).toEqual({
      key: 'browser-origin:null',
      exempt: false,
    });
    expect(authSubject(plain(req('203.0.113.4', { origin: 'https://evil.example' })))).toEqual({
      key: '203.0.113.4',
      exempt: false,
    });
    expect(
      authSubject(
        r(req('127.0.0.1', { origin: 'https://evil.example', 'x-forwarded-for': '198.51.100.2' })),
      ),
    ).toEqual({
      key: '198.51.100.2',
      exempt: false,
    });
  });

  it('unresolved clients share the unknown bucket, never exempt', () => {
    expect(authSubject(r(req('127.0.0.1', { 'x-forwarded-for': 'bogus' })))).toEqual({
      key: 'unknown',
      exempt: false,
    });
    expect(
      authSubject(r(req('127.0.0.1', { 'x-forwarded-for': 'bogus', origin: 'https://a.example' }))),
    ).toEqual({
      key: 'unknown',
      exempt: false,
    });
  });
});

describe('a browser request without Origin (Sec-Fetch-Site)', () => {
  it.each([
    ['cross-site'],
    ['same-site'],
    ['same-origin'],
    ['none'],
    ['CROSS-SITE'],
    [''],
    ['bogus value'],
  ])(
    'Sec-Fetch-Site: %j from loopback is a browser: never direct-local, an opaque origin',
    (site) => {
      expect(resolveClient(req('127.0.0.1', { 'sec-fetch-site': site }))).toEqual({
        ip: '127.0.0.1',
        directLocal: false,
        proxied: false,
        origin: 'null',
      });
    },
  );

  it('a repeated Sec-Fetch-Site is a browser too', () => {
    expect(
      resolveClient(
        req('::1', { 'sec-fetch-site': 'cross-site, none' }, [
          'Sec-Fetch-Site',
          'cross-site',
          'Sec-Fetch-Site',
          'none',
        ]),
      ),
    ).toEqual({ ip: '::1', directLocal: false, proxied: false, origin: 'null' });
  });

  it('an Origin wins over Sec-Fetch-Site; Sec-Fetch-Mode alone (Node’s fetch) is no browser', () => {
    expect(
      resolveClient(req('127.0.0.1', { origin: 'http://a.localhost', 'sec-fetch-site': 'none' })),
    ).toMatchObject({ directLocal: false, origin: 'http://a.localhost' });
    expect(resolveClient(req('127.0.0.1', { 'sec-fetch-mode': 'cors' }))).toEqual({
      ip: '127.0.0.1',
      directLocal: true,
      proxied: false,
      origin: undefined,
    });
  });

  it('authSubject keys it as browser-origin:null from loopback, by IP from elsewhere, never exempt', () => {
    const local = resolveClient(req('127.0.0.1', { 'sec-fetch-site': 'cross-site' }));
    expect(authSubject(local)).toEqual({ key: 'browser-origin:null', exempt: false });
    const remote = resolveClient(req('203.0.113.8', { 'sec-fetch-site': 'cross-site' }));
    expect(authSubject(remote)).toEqual({ key: '203.0.113.8', exempt: false });
  });
});
