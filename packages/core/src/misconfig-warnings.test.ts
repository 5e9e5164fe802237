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

  it('also on the request gate’s address-only path', () => {
    const l = logger();
    const gate = createRequestGate({ logger: l });
    gate.run(
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

  it('per-request policies share a name on purpose and never warn', () => {
    const l = logger();
    const gate = createRequestGate<{ n: number }>({ limit: (r) => r.n, logger: l });
    for (const n of [1, 2, 3])
      gate.run({ socket: { remoteAddress: '198.51.100.3' }, headers: {} }, { n });
    expect(l.warn).not.toHaveBeenCalled();
    gate.close();
  });
});
