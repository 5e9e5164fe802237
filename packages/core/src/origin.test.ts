import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeOrigin } from './origin.js';

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
    ['file:///tmp/x.html', 'browser-origin:null'],
    ['chrome-extension://abcdefghijklmnop', 'browser-origin:null'],
    ['about:blank', 'browser-origin:null'],
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
