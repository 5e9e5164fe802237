import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import { MemoryStore } from '../memory-store.js';
import { manualClock } from '../testing/manual-clock.js';
import { createRequestGate, type RequestResult } from './request-gate.js';

interface Req {
  plan?: 'free' | 'pro';
  user?: string;
}

const raw = (ip: string): RawRequest => ({ socket: { remoteAddress: ip }, headers: {} });

function spend(gate: ReturnType<typeof createRequestGate<Req>>, ip: string, req: Req, n: number) {
  const out: RequestResult[] = [];
  for (let i = 0; i < n; i++) out.push(gate.run(raw(ip), req) as RequestResult);
  return out;
}

describe('per-request limit and windowMs', () => {
  it('advertises the limit that applied, each plan its own policy', () => {
    const clock = manualClock(0);
    const gate = createRequestGate<Req>({
      limit: (req) => (req.plan === 'pro' ? 5 : 2),
      clock,
      timers: clock,
    });
    const free = spend(gate, '203.0.113.1', { plan: 'free' }, 3);
    expect(free.map((r) => r.ok)).toEqual([true, true, false]);
    expect(free[0]?.headers).toEqual({
      'RateLimit-Policy': '"default";q=2;w=60',
      RateLimit: '"default";r=1;t=60',
    });
    // The same client upgraded: the new numbers apply at once, from a count of their own.
    const pro = spend(gate, '203.0.113.1', { plan: 'pro' }, 6);
    expect(pro.map((r) => r.ok)).toEqual([true, true, true, true, true, false]);
    expect(pro[0]?.headers).toEqual({
      'RateLimit-Policy': '"default";q=5;w=60',
      RateLimit: '"default";r=4;t=60',
    });
    expect(pro[0]?.decision.key).toBe('203.0.113.1');
    // Downgraded again: the free count was never touched by the pro requests.
    expect((gate.run(raw('203.0.113.1'), { plan: 'free' }) as RequestResult).ok).toBe(false);
  });

  it('takes async functions for limit and windowMs', async () => {
    const clock = manualClock(0);
    const gate = createRequestGate<Req>({
      limit: async () => 1,
      windowMs: async (req) => (req.plan === 'pro' ? 1_000 : 10_000),
      clock,
      timers: clock,
    });
    const first = await gate.run(raw('203.0.113.2'), { plan: 'pro' });
    const second = await gate.run(raw('203.0.113.2'), { plan: 'pro' });
    expect([first?.ok, second?.ok]).toEqual([true, false]);
    expect(second?.headers['Retry-After']).toBe('1');
    clock.advance(1_000);
    expect((await gate.run(raw('203.0.113.2'), { plan: 'pro' }))?.ok).toBe(true);
    const slow = await gate.run(raw('203.0.113.2'), {});
    expect(slow?.headers['RateLimit-Policy']).toBe('"default";q=1;w=10');
  });

  it('refuses what a limit function must not return', () => {
    const gate = createRequestGate<Req>({ limit: () => Number.NaN });
    expect(() => gate.run(raw('203.0.113.3'), {})).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMIT' }),
    );
    const slow = createRequestGate<Req>({ windowMs: () => 2 ** 60 });
    expect(() => slow.run(raw('203.0.113.3'), {})).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_WINDOW_MS' }),
    );
  });

  it('works over a store you pass, policies apart', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const gate = createRequestGate<Req>({ limit: (r) => (r.plan === 'pro' ? 2 : 1), store });
    expect(spend(gate, '203.0.113.4', {}, 2).map((r) => r.ok)).toEqual([true, false]);
    expect(spend(gate, '203.0.113.4', { plan: 'pro' }, 3).map((r) => r.ok)).toEqual([
      true,
      true,
      false,
    ]);
    expect(store.size()).toBe(2);
    expect(gate.close()).toBeUndefined();
  });
});

describe('key(req, defaultKey)', () => {
  it('receives the IP-derived default key (IPv6 by /64)', () => {
    const seen: string[] = [];
    const gate = createRequestGate<Req>({
      limit: 1,
      key: (req, ip) => {
        seen.push(ip);
        return req.user ?? ip;
      },
    });
    const a = gate.run(raw('2001:db8:1:2::a'), {}) as RequestResult;
    const b = gate.run(raw('2001:db8:1:2::b'), {}) as RequestResult;
    expect([a.ok, b.ok]).toEqual([true, false]);
    expect(seen).toEqual(['2001:db8:1:2::/64', '2001:db8:1:2::/64']);
    expect((gate.run(raw('2001:db8:1:2::c'), { user: 'alice' }) as RequestResult).ok).toBe(true);
  });
});

describe('stacked limiters on one request', () => {
  it('advertise every policy as a structured-field list; legacy shows the most restrictive', async () => {
    const clock = manualClock(0);
    const burst = createRequestGate<Req>({
      name: 'burst',
      limit: 5,
      windowMs: 1_000,
      headers: 'legacy',
      clock,
      timers: clock,
    });
    const daily = createRequestGate<Req>({
      name: 'daily',
      limit: 1000,
      windowMs: 86_400_000,
      headers: 'legacy',
      clock,
      timers: clock,
    });
    const request = raw('203.0.113.9');
    await burst.run(request, {});
    const both = daily.run(request, {}) as RequestResult;
    expect(both.headers).toEqual({
      'RateLimit-Policy': '"burst";q=5;w=1, "daily";q=1000;w=86400',
      RateLimit: '"burst";r=4;t=1, "daily";r=999;t=86400',
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '4',
      'X-RateLimit-Reset': '1',
    });
    // A later request starts its own list.
    const next = raw('203.0.113.9');
    expect((burst.run(next, {}) as RequestResult).headers['RateLimit-Policy']).toBe(
      '"burst";q=5;w=1',
    );
    await burst.close();
    await daily.close();
  });

  it('a refusal by the second limiter carries both policies; the same name twice warns once', async () => {
    const clock = manualClock(0);
    const warnings: unknown[] = [];
    const logger = { warn: (o: object) => warnings.push(o), error: () => {} };
    const a = createRequestGate<Req>({ limit: 10, clock, timers: clock, logger });
    const b = createRequestGate<Req>({ limit: 1, clock, timers: clock, logger });
    const first = raw('203.0.113.10');
    await a.run(first, {});
    await b.run(first, {});
    const second = raw('203.0.113.10');
    await a.run(second, {});
    const refused = b.run(second, {}) as RequestResult;
    expect(refused.ok).toBe(false);
    expect(refused.answer?.headers).toMatchObject({
      'RateLimit-Policy': '"default";q=10;w=60, "default";q=1;w=60',
      RateLimit: '"default";r=8;t=60, "default";r=0;t=60',
      'Retry-After': '60',
    });
    expect(warnings).toEqual([{ code: 'PORTCULLIS_DUPLICATE_POLICY', limiter: 'default' }]);
    await a.close();
    await b.close();
  });
});
