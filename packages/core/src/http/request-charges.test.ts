// `chargeAfter` (docs/design.md#charge-after) through the request gate and `WindowLimiter.charge`:
// what is charged, to which budget, when nothing is, and what a bad answer does.
import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import { MemoryStore } from '../memory-store.js';
import { manualClock } from '../testing/manual-clock.js';
import { createWindowLimiter } from '../window-limiter.js';
import { createRequestGate, type RequestResult } from './request-gate.js';

const raw = (ip: string): RawRequest => ({ socket: { remoteAddress: ip }, headers: {} });

interface Req {
  readonly charge?: unknown;
}

/** A response the gate watches; `end()` finishes it. */
function response(statusCode = 200) {
  const listeners: Record<string, () => void> = {};
  return {
    statusCode,
    writableFinished: true,
    once: (e: 'close' | 'finish', l: () => void) => {
      listeners[e] = l;
    },
    end: () => listeners.finish?.(),
    leave: () => listeners.close?.(),
  };
}

const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

function gate(extra: Record<string, unknown> = {}) {
  const clock = manualClock(0);
  const errors: string[] = [];
  const g = createRequestGate<Req>({
    limit: 10,
    windowMs: 60_000,
    clock,
    timers: clock,
    chargeAfter: (req: Req) => req.charge as number,
    logger: { warn() {}, error: (o: object) => errors.push((o as { code: string }).code) },
    ...extra,
  });
  /** One request from `ip`, answered, charging `charge` after. */
  const request = (charge: unknown, ip = '192.0.2.1', end: 'end' | 'leave' = 'end') => {
    const req: Req = { charge };
    const result = g.run(raw(ip), req) as RequestResult;
    const res = response();
    if (result.ok) g.track(result, res, req, res);
    res[end]();
    return result;
  };
  return { g, clock, errors, request };
}

describe('chargeAfter', () => {
  it('spends what the response cost beside the up-front unit; the next request sees it', () => {
    const { request } = gate();
    expect(request(4).decision.remaining).toBe(9); // 1 up front
    // 1 + 4 spent: 5 left before this one's own unit.
    expect(request(0).decision.remaining).toBe(4);
    expect(request(0).decision.remaining).toBe(3);
  });

  it('a charge larger than what is left spends what is left: the next request is refused', () => {
    const { request } = gate();
    request(1000);
    const next = request(0);
    expect(next.ok).toBe(false);
    expect(next.decision).toMatchObject({ allowed: false, reason: 'limited', remaining: 0 });
  });

  it('charges a client that left before the response ended; never a refused or skipped one', () => {
    const { request, g } = gate({ skip: (req: Req) => req.charge === 'skip' });
    request(3, '192.0.2.1', 'leave');
    expect(request(0).decision.remaining).toBe(5);
    // Refused requests spend nothing up front, so they are charged nothing after.
    const { request: other } = gate({ limit: 1 });
    other(0);
    expect(other(50).ok).toBe(false);
    expect(g.run(raw('192.0.2.1'), { charge: 'skip' })).toBeUndefined();
  });

  it('a reset between the spend and the charge forgives the charge', () => {
    const { g } = gate();
    const req: Req = { charge: 5 };
    const result = g.run(raw('192.0.2.1'), req) as RequestResult;
    const res = response();
    g.track(result, res, req, res);
    void g.limiter.reset('192.0.2.1');
    res.end();
    expect((g.run(raw('192.0.2.1'), { charge: 0 }) as RequestResult).decision.remaining).toBe(9);
  });

  it.each([-1, 1.5, Number.NaN, '3', undefined, 2 ** 60])(
    'an answer of %s is logged as PORTCULLIS_CHARGE_ERROR and charges nothing',
    (bad) => {
      const { request, errors } = gate();
      request(bad);
      expect(errors).toEqual(['PORTCULLIS_CHARGE_ERROR']);
      expect(request(0).decision.remaining).toBe(8);
    },
  );

  it('an async answer, and a throw or a rejection (logged, nothing charged)', async () => {
    const { request, errors } = gate({
      chargeAfter: (req: Req) => {
        if (req.charge === 'throw') throw new Error('the meter broke');
        if (req.charge === 'reject') return Promise.reject(new Error('the meter is away'));
        return Promise.resolve(req.charge as number);
      },
    });
    request(2);
    await flush();
    expect(request('throw').decision.remaining).toBe(6);
    request('reject');
    await flush();
    expect(errors).toEqual(['PORTCULLIS_CHARGE_ERROR', 'PORTCULLIS_CHARGE_ERROR']);
    expect(request(0).decision.remaining).toBe(4);
  });

  it('charges the policy a request spent in, when limit is a function of the request', () => {
    const { request } = gate({ limit: (req: Req) => (req.charge === 0 ? 10 : 20) });
    expect(request(5).decision.limit).toBe(20);
    // The 20-policy took 1 + 5; the 10-policy is untouched.
    expect(request(0).decision).toMatchObject({ limit: 10, remaining: 9 });
  });

  it('charges the IPv6 networks the request spent in too', () => {
    const { request } = gate({ ipv6Networks: [{ prefix: 56, factor: 2 }] });
    request(18, '2001:db8:aa:100::1');
    // The /56 (20 units) took 1 + 18: a sibling /64 gets its one unit, then the network refuses.
    expect(request(0, '2001:db8:aa:101::1').ok).toBe(true);
    const refused = request(0, '2001:db8:aa:102::1');
    expect([refused.ok, refused.decision.key]).toEqual([false, '2001:db8:aa:100::/56']);
  });

  it('a limiter without charge() is refused with chargeAfter', () => {
    const real = createWindowLimiter();
    const { charge: _no, ...limiter } = {
      consume: real.consume,
      peek: real.peek,
      reset: real.reset,
      refund: real.refund,
      reconfigure: real.reconfigure,
      charge: real.charge,
    };
    expect(() => createRequestGate({ limiter: limiter as never, chargeAfter: () => 1 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMITER', option: 'limiter' }),
    );
    expect(() => createRequestGate({ chargeAfter: 5 as never })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_CHARGE_AFTER' }),
    );
  });
});

describe('WindowLimiter.charge', () => {
  it.each(['fixed-window', 'sliding-window', 'token-bucket'] as const)(
    '%s: spends all when it fits, what is left when not, nothing for 0; publishes no decision',
    (algorithm) => {
      const clock = manualClock(0);
      const l = createWindowLimiter({
        limit: 5,
        windowMs: 60_000,
        algorithm,
        store: new MemoryStore({ clock, timers: clock }),
      });
      expect(l.charge('k', 0)).toBe(0);
      expect(l.charge('k', 3)).toBe(3);
      expect(l.charge('k', 9)).toBe(2);
      expect(l.charge('k', 1)).toBe(0);
      expect((l.consume('k') as { allowed: boolean }).allowed).toBe(false);
      expect(() => l.charge('k', -1)).toThrow(
        expect.objectContaining({ code: 'ERR_PORTCULLIS_COST' }),
      );
    },
  );
});

describe('gate.charge(raw, req, units): a handler charging at once', () => {
  const make = (extra: Record<string, unknown> = {}) => {
    const clock = manualClock(0);
    return createRequestGate<{ plan?: string; skip?: boolean; user?: string }>({
      limit: 10,
      windowMs: 60_000,
      clock,
      timers: clock,
      ...extra,
    });
  };

  it('spends in the client window; what is left when fewer units are', async () => {
    const g = make();
    void g.run(raw('192.0.2.1'), {});
    expect(await g.charge(raw('192.0.2.1'), {}, 4)).toBe(4);
    expect(await g.charge(raw('192.0.2.1'), {}, 0)).toBe(0);
    expect((g.limiter.peek('192.0.2.1') as { remaining: number }).remaining).toBe(5);
    expect(await g.charge(raw('192.0.2.1'), {}, 50)).toBe(5);
    expect((g.run(raw('192.0.2.1'), {}) as RequestResult).ok).toBe(false);
  });

  it('follows key, per-request policies and skip', async () => {
    const g = make({
      key: (req: { user?: string }, ip: string) => req.user ?? ip,
      limit: (req: { plan?: string }) => (req.plan === 'pro' ? 100 : 10),
      skip: (req: { skip?: boolean }) => req.skip === true,
    });
    void g.run(raw('192.0.2.1'), { user: 'u1', plan: 'pro' });
    expect(await g.charge(raw('192.0.2.1'), { user: 'u1', plan: 'pro' }, 60)).toBe(60);
    const r = g.run(raw('192.0.2.1'), { user: 'u1', plan: 'pro' }) as RequestResult;
    expect(r.decision.remaining).toBe(38);
    expect(await g.charge(raw('192.0.2.1'), { user: 'u1', skip: true }, 5)).toBe(0);
  });

  it('charges the IPv6 networks too', async () => {
    const g = make({ ipv6Networks: [{ prefix: 56, factor: 2 }] });
    const a = raw('2001:db8:1:100::1');
    void g.run(a, {});
    expect(await g.charge(a, {}, 9)).toBe(9);
    // The /56 holds 20: 1 + 9 spent; another /64 of it has its own 10 but only 10 left there.
    const other = raw('2001:db8:1:1ff::1');
    expect(await g.charge(other, {}, 15)).toBe(10);
    expect((g.run(other, {}) as RequestResult).ok).toBe(false);
  });

  it('rejects units that are not a non-negative integer', async () => {
    const g = make();
    for (const bad of [-1, 1.5, Number.NaN, '3', Number.MAX_SAFE_INTEGER + 1])
      await expect(g.charge(raw('192.0.2.1'), {}, bad as number)).rejects.toMatchObject({
        code: 'ERR_PORTCULLIS_COST',
      });
  });
});
