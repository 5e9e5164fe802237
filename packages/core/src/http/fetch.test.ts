import { describe, expect, it, vi } from 'vitest';
import { resolveClient } from '../client.js';
import { createRequestGate } from './request-gate.js';
import { fetchRawRequest, knownOutcome, outcomeOnce, unresolvedAddressWarning } from './fetch.js';

describe('fetchRawRequest', () => {
  it('holds the address and the headers by lower-case name, repeated ones joined with ", "', () => {
    const headers = new Headers({ 'X-Forwarded-For': '198.51.100.7' });
    headers.append('Origin', 'http://a.test');
    headers.append('Origin', 'http://b.test');
    const raw = fetchRawRequest({ headers }, '10.0.0.2');
    expect(raw).toEqual({
      socket: { remoteAddress: '10.0.0.2' },
      headers: { 'x-forwarded-for': '198.51.100.7', origin: 'http://a.test, http://b.test' },
    });
    expect(resolveClient(raw, { trustedProxies: ['10.0.0.0/8'] })).toEqual({
      ip: '198.51.100.7',
      directLocal: false,
      proxied: true,
      origin: 'http://a.test, http://b.test',
    });
  });

  it('gives one object per request and address (stacked limiters recognise the request)', () => {
    const request = new Request('http://x/');
    const raw = fetchRawRequest(request, '192.0.2.1');
    expect(fetchRawRequest(request, '192.0.2.1')).toBe(raw);
    expect(fetchRawRequest(request, '192.0.2.9')).not.toBe(raw);
    expect(fetchRawRequest(new Request('http://x/'), '192.0.2.1')).not.toBe(raw);
  });
});

describe('knownOutcome and outcomeOnce', () => {
  it('settles a request gate from a status, or as aborted', () => {
    const gate = createRequestGate({ limit: 1, skipFailedRequests: true });
    const raw = fetchRawRequest(new Request('http://x/'), '192.0.2.1');
    const spend = () =>
      gate.run(raw, raw) as Exclude<ReturnType<typeof gate.run>, Promise<unknown>>;
    const first = spend();
    gate.track(first as never, knownOutcome(500), raw, undefined);
    const second = spend();
    gate.track(second as never, knownOutcome(undefined), raw, undefined);
    const third = spend();
    gate.track(third as never, knownOutcome(200), raw, undefined);
    expect([first?.ok, second?.ok, third?.ok, spend()?.ok]).toEqual([true, true, true, false]);
  });

  it('settles once: with the status, or on an abort that came first', () => {
    const settled: (number | undefined)[] = [];
    const controller = new AbortController();
    const finish = outcomeOnce(controller.signal, (s) => settled.push(s));
    controller.abort();
    finish(200);
    const later = outcomeOnce(new AbortController().signal, (s) => settled.push(s));
    later(204);
    later(500);
    outcomeOnce(AbortSignal.abort(), (s) => settled.push(s));
    expect(settled).toEqual([undefined, 204, undefined]);
  });

  it('warns once', () => {
    const logger = { warn: vi.fn(), error: vi.fn() };
    const warn = unresolvedAddressWarning(logger, 'rateLimit', 'Fix it.');
    warn();
    warn();
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_NO_CLIENT_ADDRESS' },
      'Portcullis: rateLimit could not learn the client address of a request; such requests share one "unknown" bucket. Fix it.',
    );
  });
});
