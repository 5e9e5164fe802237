import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeOrigin, originSite } from './origin.js';

describe('normalizeOrigin', () => {
  it.each([
    ['https://example.com', 'browser-origin:https://example.com'],
    ['HTTPS://Example.COM:443', 'browser-origin:https://example.com'],
    ['http://localhost:80', 'browser-origin:http://localhost'],
    ['http://localhost:5173', 'browser-origin:http://localhost:5173'],
    ['http://127.0.0.1:8080', 'browser-origin:http://127.0.0.1:8080'],
    ['https://bücher.example', 'browser-origin:https://xn--bcher-kva.example'],
    ['http://[::1]:3000', 'browser-origin:http://[::1]:3000'],
    ['null', 'browser-origin:null'],
    ['file:///tmp/x.html', 'browser-origin:file:'],
    ['chrome-extension://abcdefghijklmnop', 'browser-origin:chrome-extension://abcdefghijklmnop'],
    ['Chrome-Extension://ABCDEFGHIJKLMNOP/', 'browser-origin:chrome-extension://abcdefghijklmnop'],
    [
      'moz-extension://4b1a2c3d-1111-2222-3333-444455556666',
      'browser-origin:moz-extension://4b1a2c3d-1111-2222-3333-444455556666',
    ],
    ['about:blank', 'browser-origin:about:'],
    ['not a url', 'browser-origin:invalid'],
    ['', 'browser-origin:invalid'],
    ['https://a.example, https://b.example', 'browser-origin:invalid'],
    [`https://${'a'.repeat(2100)}.example`, 'browser-origin:invalid'],
  ])('%j → %s', (input, key) => {
    expect(normalizeOrigin(input)).toBe(key);
  });

  it('treats repeated headers (arrays) and non-strings as invalid', () => {
    expect(normalizeOrigin(['https://a.example', 'https://a.example'])).toBe(
      'browser-origin:invalid',
    );
    expect(normalizeOrigin(undefined)).toBe('browser-origin:invalid');
    expect(normalizeOrigin(42)).toBe('browser-origin:invalid');
  });

  it('never throws and always yields a bounded browser-origin key', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 300 }), fc.webUrl(), fc.constant('null')),
        (s) => {
          const key = normalizeOrigin(s);
          expect(key.startsWith('browser-origin:')).toBe(true);
          expect(key.length).toBeLessThanOrEqual(2100);
        },
      ),
    );
  });

  it('two spellings of one origin share one bucket', () => {
    fc.assert(
      fc.property(fc.domain(), fc.constantFrom('http', 'https'), (host, scheme) => {
        const port = scheme === 'http' ? ':80' : ':443';
        expect(normalizeOrigin(`${scheme.toUpperCase()}://${host.toUpperCase()}${port}`)).toBe(
          normalizeOrigin(`${scheme}://${host}`),
        );
      }),
    );
  });
});

describe('opaque origins', () => {
  it('a sandboxed page (null) and an extension never share a bucket', () => {
    const sandboxed = normalizeOrigin('null');
    const extension = normalizeOrigin('chrome-extension://abcdefghijklmnop');
    const other = normalizeOrigin('chrome-extension://ponmlkjihgfedcba');
    expect(new Set([sandboxed, extension, other]).size).toBe(3);
  });
});

describe('originSite', () => {
  it.each([
    ['browser-origin:https://s7.evil.example', 'evil.example'],
    ['browser-origin:http://evil.example:8080', 'evil.example'],
    ['browser-origin:https://a.b.example.co.uk', 'example.co.uk'],
    ['browser-origin:https://alice.github.io', 'alice.github.io'],
    ['browser-origin:https://bob.github.io', 'bob.github.io'],
    ['browser-origin:http://localhost:5173', 'localhost'],
    ['browser-origin:http://s3.localhost:5173', 'localhost'],
    ['browser-origin:http://127.0.0.1:8080', '127.0.0.1'],
    ['browser-origin:http://[::1]:3000', '[::1]'],
    ['browser-origin:https://xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['browser-origin:null', 'null'],
    ['browser-origin:invalid', 'invalid'],
    ['browser-origin:chrome-extension://abcdefghijklmnop', 'chrome-extension://abcdefghijklmnop'],
    ['browser-origin:file:', 'file:'],
    // A trailing dot names the same host: one site with and without it.
    ['browser-origin:http://p0.localhost.', 'localhost'],
    ['browser-origin:http://p39.localhost.:5173', 'localhost'],
    ['browser-origin:http://localhost.', 'localhost'],
    ['browser-origin:http://x.localhost..', 'localhost'],
    ['browser-origin:https://s7.evil.example.', 'evil.example'],
    ['browser-origin:https://evil.example.:8443', 'evil.example'],
    ['browser-origin:https://a.b.example.co.uk.', 'example.co.uk'],
    ['browser-origin:https://alice.github.io.', 'alice.github.io'],
    ['browser-origin:http://intranet.', 'intranet'],
    ['browser-origin:http://.', '.'],
  ])('%s → %s', (key, site) => {
    expect(originSite(key)).toBe(site);
  });

  it('every subdomain of one registrable domain is one site', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z0-9]{1,12}$/), { maxLength: 4 }), (labels) => {
        const host = [...labels, 'evil', 'example'].join('.');
        expect(originSite(normalizeOrigin(`https://${host}`))).toBe('evil.example');
      }),
    );
  });

  it('never throws on any key normalizeOrigin can make', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.webUrl()), (s) => {
        expect(typeof originSite(normalizeOrigin(s))).toBe('string');
      }),
    );
  });
});
