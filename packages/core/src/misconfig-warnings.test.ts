import { describe, expect, it, vi } from 'vitest';
import { createClientResolver } from './client.js';
import { createFailureLimiter } from './failure-limiter.js';
import { createRequestGate } from './http/request-gate.js';
import { MemoryStore } from './memory-store.js';
import { createWindowLimiter } from './window-limiter.js';

const logger = () => ({ warn: vi.fn(), error: vi.fn() });
const codes = (l: ReturnType<typeof logger>) =>
  l.warn.mock.calls.map((c) => (c[0] as { code: string }).code);

describe('misconfiguration warnings (once, through the logger)', () => {
  it('X-Forwarded-For from a peer that is neither trusted nor loopback', () => {
    const l = logger();
    const resolve = createClientResolver({ logger: l });
    const req = (ip: string, headers: Record<string, string> = {}) => ({
      socket: { remoteAddress: ip },
      headers,
    });
    resolve(req('198.51.100.1'));
    expect(l.warn).not.toHaveBeenCalled();
    for (let i = 0; i < 3; i++)
      expect(resolve(req('198.51.100.1', { 'x-forwarded-for': '203.0.113.5' })).ip).toBe(
        '198.51.100.1',
      );
    expect(codes(l)).toEqual(['PORTCULLIS_UNTRUSTED_FORWARDED']);
    expect(l.warn.mock.calls[0]?.[1]).toContain('add its address to trustedProxies');
  });

  it('also on the request gate’s address-only path', async () => {
    const l = logger();
    const gate = createRequestGate({ logger: l });
    await gate.run(
      { socket: { remoteAddress: '198.51.100.2' }, headers: { 'x-forwarded-for': '1.2.3.4' } },
      {},
    );
    expect(codes(l)).toEqual(['PORTCULLIS_UNTRUSTED_FORWARDED']);
  });

  it('two limiters with one name on one shared store with different numbers', () => {
    const l = logger();
    const store = new MemoryStore();
    createWindowLimiter({ store, limit: 10, logger: l });
    createWindowLimiter({ store, limit: 10, logger: l });
    expect(l.warn).not.toHaveBeenCalled();
    createWindowLimiter({ store, limit: 20, logger: l });
    createWindowLimiter({ store, limit: 30, logger: l });
    createWindowLimiter({ store, limit: 20, name: 'other', logger: l });
    expect(codes(l)).toEqual(['PORTCULLIS_NAME_CLASH']);
    createFailureLimiter({ store, maxAttempts: 5, logger: l });
    createFailureLimiter({ store, maxAttempts: 6, logger: l });
    expect(codes(l)).toEqual(['PORTCULLIS_NAME_CLASH', 'PORTCULLIS_NAME_CLASH']);
    store.close();
  });

  it('per-request policies share a name on purpose and never warn', async () => {
    const l = logger();
    const gate = createRequestGate<{ n: number }>({ limit: (r) => r.n, logger: l });
    for (const n of [1, 2, 3])
      await gate.run({ socket: { remoteAddress: '198.51.100.3' }, headers: {} }, { n });
    expect(l.warn).not.toHaveBeenCalled();
    await gate.close();
  });
});

describe('warnings switched off one by one (`warnings: { CODE: false }`)', () => {
  const forwarded = (ip: string) => ({
    socket: { remoteAddress: ip },
    headers: { 'x-forwarded-for': '203.0.113.5' },
  });
  const spoofed = { socket: { remoteAddress: '127.0.0.1' }, headers: { 'x-real-ip': '1.2.3.4' } };

  it('each client-identity warning alone, the other still given', () => {
    const l = logger();
    const resolve = createClientResolver({
      logger: l,
      warnings: { PORTCULLIS_UNTRUSTED_FORWARDED: false },
    });
    resolve(forwarded('198.51.100.1'));
    resolve(spoofed);
    expect(codes(l)).toEqual(['PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY']);
    const m = logger();
    const other = createClientResolver({
      logger: m,
      warnings: {
        PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY: false,
        PORTCULLIS_UNTRUSTED_FORWARDED: true,
      },
    });
    other(forwarded('198.51.100.1'));
    other(spoofed);
    expect(codes(m)).toEqual(['PORTCULLIS_UNTRUSTED_FORWARDED']);
  });

  it('a name clash, on the limiter that would report it', () => {
    const l = logger();
    const store = new MemoryStore();
    createWindowLimiter({ store, limit: 10, logger: l });
    createWindowLimiter({
      store,
      limit: 20,
      logger: l,
      warnings: { PORTCULLIS_NAME_CLASH: false },
    });
    createFailureLimiter({ store, maxAttempts: 5, logger: l });
    createFailureLimiter({
      store,
      maxAttempts: 6,
      logger: l,
      warnings: { PORTCULLIS_NAME_CLASH: false },
    });
    expect(codes(l)).toEqual([]);
    store.close();
  });

  it('through a request gate: its resolver, its limiter and the duplicate-policy warning', async () => {
    const l = logger();
    const store = new MemoryStore();
    const off = {
      PORTCULLIS_UNTRUSTED_FORWARDED: false,
      PORTCULLIS_NAME_CLASH: false,
      PORTCULLIS_DUPLICATE_POLICY: false,
    } as const;
    const first = createRequestGate({ limit: 100, store, logger: l, warnings: off });
    const second = createRequestGate({ limit: 10, store, logger: l, warnings: off });
    const raw = forwarded('198.51.100.4');
    await first.run(raw, {});
    await second.run(raw, {});
    expect(codes(l)).toEqual([]);
    // The same two without the option: all three warnings (each gate's resolver warns once).
    const loud = new MemoryStore();
    const a = createRequestGate({ limit: 100, store: loud, logger: l });
    const b = createRequestGate({ limit: 10, store: loud, logger: l });
    const again = forwarded('198.51.100.5');
    await a.run(again, {});
    await b.run(again, {});
    expect(codes(l)).toEqual([
      'PORTCULLIS_NAME_CLASH',
      'PORTCULLIS_UNTRUSTED_FORWARDED',
      'PORTCULLIS_UNTRUSTED_FORWARDED',
      'PORTCULLIS_DUPLICATE_POLICY',
    ]);
    store.close();
    loud.close();
  });

  it('a code that does not exist, or a value that is not a boolean, is a config error', () => {
    expect(() =>
      createWindowLimiter({ warnings: { PORTCULLIS_NAME_CLASHES: false } as never }),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_PORTCULLIS_WARNINGS',
        option: 'warnings',
        message: expect.stringContaining(
          '"PORTCULLIS_NAME_CLASHES" is no warning code (did you mean "PORTCULLIS_NAME_CLASH"?)',
        ),
      }),
    );
    expect(() =>
      createClientResolver({ warnings: { PORTCULLIS_UNTRUSTED_FORWARDED: 0 } as never }),
    ).toThrow(expect.objectContaining({ code: 'ERR_PORTCULLIS_WARNINGS' }));
    expect(() => createRequestGate({ warnings: false as never })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_WARNINGS' }),
    );
  });
});
