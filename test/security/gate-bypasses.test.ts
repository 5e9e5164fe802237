/*
 * Regression tests for the auth-gate bypasses found by the hostile-client review: each test replays
 * the attack that worked and asserts the exact answers it must now get.
 */
import {
  type AuthOutcome,
  createFailureLimiter,
  MemoryStore,
  type RawRequest,
  resolveClient,
  type Store,
} from '@portcullis/core';
import { createAuthGate, type GateResult } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { describe, expect, it } from 'vitest';

const raw = (ip: string, headers: Record<string, string> = {}): RawRequest => ({
  socket: { remoteAddress: ip },
  headers,
});

interface Creds {
  token?: string;
}

function gate(extra: Record<string, unknown> = {}, maxAttempts = 10) {
  const clock = manualClock(1_000_000);
  const g = createAuthGate<Creds>({
    verify: (r) => (r.token === undefined ? 'missing' : r.token === 'right' ? 'ok' : 'invalid'),
    maxAttempts,
    clock,
    timers: clock,
    ...extra,
  });
  return { clock, gate: g };
}

const status = (r: GateResult) => (r.ok ? 200 : r.answer.status);

function tally(results: readonly GateResult[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of results) out[status(r)] = (out[status(r)] ?? 0) + 1;
  return out;
}

describe('a loopback hop behind a trusted proxy is unresolved (fail closed)', () => {
  const trustedProxies = ['10.0.0.0/8'];

  it.each([
    ['127.0.0.1'],
    ['127.9.9.9'],
    ['::1'],
    ['[::1]:443'],
    ['::ffff:127.0.0.1'],
    ['::ffff:7f00:1'],
    ['127.0.0.1:8080'],
  ])('X-Forwarded-For: %s → unresolved, never loopback, never per origin', (hop) => {
    const client = resolveClient(
      raw('10.0.0.50', { 'x-forwarded-for': hop, origin: 'https://a.example' }),
      { trustedProxies },
    );
    expect(client).toEqual({
      ip: undefined,
      directLocal: false,
      proxied: true,
      origin: 'https://a.example',
    });
  });

  it('never walks further left into what the client wrote', () => {
    const client = resolveClient(
      raw('10.0.0.50', { 'x-forwarded-for': '198.51.100.7, 127.0.0.1, 10.0.0.9' }),
      { trustedProxies },
    );
    expect(client.ip).toBeUndefined();
  });

  it('a loopback X-Real-IP from a trusted proxy is unresolved too', () => {
    const client = resolveClient(raw('10.0.0.50', { 'x-real-ip': '127.0.0.1' }), {
      trustedProxies,
      allowRealIpFallback: true,
    });
    expect(client.ip).toBeUndefined();
  });

  it('a loopback hop that is itself a trusted proxy is skipped as usual', () => {
    const client = resolveClient(
      raw('10.0.0.50', { 'x-forwarded-for': '198.51.100.7, 127.0.0.1' }),
      { trustedProxies: ['10.0.0.0/8', '127.0.0.1'] },
    );
    expect(client.ip).toBe('198.51.100.7');
  });

  it('rotating Origin behind the spoofed hop: 2 wrong guesses answered 401, then 429', () => {
    const { gate: g } = gate({ trustedProxies }, 2);
    const results: GateResult[] = [];
    for (let i = 0; i < 100; i++) {
      const req = raw('10.0.0.50', {
        'x-forwarded-for': '127.0.0.1',
        origin: `https://s${i}.rotating.example`,
      });
      results.push(g.run(req, { token: 'guess' }) as GateResult);
    }
    expect(tally(results)).toEqual({ 401: 2, 429: 98 });
  });
});

describe('one site minting origins shares one budget', () => {
  it('50 subdomains × 10 wrong guesses: 10 answered 401, the rest 429', () => {
    const { gate: g } = gate();
    const results: GateResult[] = [];
    for (let s = 0; s < 50; s++) {
      for (let i = 0; i < 10; i++) {
        const req = raw('127.0.0.1', { origin: `https://s${s}.evil.example` });
        results.push(g.run(req, { token: 'guess' }) as GateResult);
      }
    }
    expect(tally(results)).toEqual({ 401: 10, 429: 490 });
  });

  it('many sites together are bounded by the all-origins budget (3 × maxAttempts)', () => {
    const { gate: g } = gate();
    const results: GateResult[] = [];
    for (let s = 0; s < 20; s++) {
      for (let i = 0; i < 10; i++) {
        const req = raw('127.0.0.1', { origin: `https://evil${s}.example` });
        results.push(g.run(req, { token: 'guess' }) as GateResult);
      }
    }
    expect(tally(results)).toEqual({ 401: 30, 429: 170 });
  });

  it('the budgets are tunable and a locked site does not lock another site', () => {
    const { gate: g } = gate({ browserBudget: { perSite: 4, allOrigins: 100 } });
    const send = (origin: string, token: string) =>
      status(g.run(raw('127.0.0.1', { origin }), { token }) as GateResult);
    for (let i = 0; i < 4; i++) expect(send(`https://x${i}.evil.example`, 'guess')).toBe(401);
    expect(send('https://x9.evil.example', 'right')).toBe(429);
    expect(send('https://app.good.example', 'right')).toBe(200);
  });

  it('the budgets end with the lockout', async () => {
    const { clock, gate: g } = gate();
    for (let s = 0; s < 10; s++)
      await g.run(raw('127.0.0.1', { origin: `https://s${s}.evil.example` }), { token: 'guess' });
    const next = raw('127.0.0.1', { origin: 'https://s99.evil.example' });
    const locked = g.run(next, { token: 'right' }) as GateResult;
    expect(!locked.ok && locked.decision?.retryAfterMs).toBe(300_000);
    clock.advance(300_000);
    expect(status(g.run(next, { token: 'right' }) as GateResult)).toBe(200);
  });

  it('rejects bad budget options with a config error', () => {
    expect(() => gate({ browserBudget: { perSite: 0 } })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_PER_SITE' }),
    );
    expect(() => gate({ browserBudget: { allOrigins: 'x' } })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_ALL_ORIGINS' }),
    );
    expect(() => gate({ browserBudget: { perSit: 1 } })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_UNKNOWN_OPTION' }),
    );
  });
});

describe('opaque origins do not collide', () => {
  it('a sandboxed page (Origin: null) cannot lock out an extension', async () => {
    const { gate: g } = gate({ browserBudget: { perSite: 100, allOrigins: 100 } });
    for (let i = 0; i < 10; i++)
      await g.run(raw('127.0.0.1', { origin: 'null' }), { token: 'guess' });
    const sandboxed = g.run(raw('127.0.0.1', { origin: 'null' }), { token: 'right' });
    expect(status(sandboxed as GateResult)).toBe(429);
    const extension = g.run(raw('127.0.0.1', { origin: 'chrome-extension://abcdefghijklmnop' }), {
      token: 'right',
    });
    expect(status(extension as GateResult)).toBe(200);
  });
});

describe('browser keys have a store budget of their own', () => {
  it('a local page minting origins never makes a remote client with the right token get 429', async () => {
    const clock = manualClock(0);
    const g = createAuthGate<Creds>({
      verify: (r) => (r.token === 'right' ? 'ok' : 'invalid'),
      maxAttempts: 1,
      maxEntries: 50,
      clock,
      timers: clock,
      browserBudget: { perSite: 1_000_000, allOrigins: 1_000_000 },
    });
    // Every wrong guess locks its origin: the browser store fills with lockouts it may not evict.
    for (let s = 0; s < 60; s++)
      await g.run(raw('127.0.0.1', { origin: `https://s${s}.evil${s}.example` }), {
        token: 'guess',
      });
    const flooded = g.run(raw('127.0.0.1', { origin: 'https://new.example' }), {
      token: 'guess',
    }) as GateResult;
    expect(!flooded.ok && flooded.decision?.reason).toBe('overflow');
    for (let c = 0; c < 60; c++) {
      const remote = g.run(raw(`203.0.113.${c}`), { token: 'right' }) as GateResult;
      expect(remote.ok).toBe(true);
    }
    expect(g.limiter.store).not.toBe(g.browserLimiter.store);
  });

  it('gates sharing a limiter share browser state', async () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ clock, timers: clock });
    const verify = (r: Creds): AuthOutcome => (r.token === 'right' ? 'ok' : 'invalid');
    const a = createAuthGate<Creds>({ verify, limiter });
    const b = createAuthGate<Creds>({ verify, limiter });
    expect(a.browserLimiter).toBe(b.browserLimiter);
    const page = raw('127.0.0.1', { origin: 'https://evil.example' });
    for (let i = 0; i < 5; i++) await a.run(page, { token: 'guess' });
    for (let i = 0; i < 5; i++) await b.run(page, { token: 'guess' });
    expect(status(a.run(page, { token: 'right' }) as GateResult)).toBe(429);
    expect(a.browserLimiter.close()).toBeUndefined();
    // b still holds the browser limiter: it keeps working after a's close.
    expect(status(b.run(page, { token: 'right' }) as GateResult)).toBe(429);
  });
});

/** A memory store answering every call after a random number of macrotask turns. */
function laggingStore(inner: MemoryStore, random: () => number): Store {
  const later = <T>(fn: () => T): Promise<T> =>
    new Promise((resolve) => {
      let turns = Math.floor(random() * 4);
      const step = () => (turns-- > 0 ? setImmediate(step) : resolve(fn()));
      step();
    });
  return {
    consume: (k, r, c) => later(() => inner.consume(k, r, c)),
    peek: (k, r) => later(() => inner.peek(k, r)),
    refund: (k, r, c, a) => later(() => inner.refund(k, r, c, a)),
    checkFailures: (k, r) => later(() => inner.checkFailures(k, r)),
    recordFailure: (k, r) => later(() => inner.recordFailure(k, r)),
    recordSuccess: (k, r) => later(() => inner.recordSuccess(k, r)),
    delete: (k) => later(() => inner.delete(k)),
    size: () => inner.size(),
    close: () => inner.close(),
  };
}

describe('a right credential racing wrong ones', () => {
  it('never erases a lockout in force: 20 wrong + 1 right, concurrent, on a lagging store', async () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 25; round++) {
      const clock = manualClock(0);
      const store = laggingStore(new MemoryStore({ clock, timers: clock }), random);
      const g = createAuthGate<Creds>({
        verify: (r) => (r.token === 'right' ? 'ok' : 'invalid'),
        limiter: createFailureLimiter({ store, clock, timers: clock }),
      });
      const client = raw('203.0.113.77');
      const calls = Array.from({ length: 21 }, (_, i) =>
        Promise.resolve(g.run(client, { token: i === 10 ? 'right' : 'guess' })),
      );
      const results = await Promise.all(calls);
      const after = await g.limiter.check('203.0.113.77');
      // Whatever the interleaving, at least 11 wrong guesses follow any reset: the lockout holds.
      expect(after.reason).toBe('locked');
      const right = results[10] as GateResult;
      if (right.ok) expect(right.decision?.reason).toBe('allowed');
      else expect(status(right)).toBe(429);
    }
  });
});
