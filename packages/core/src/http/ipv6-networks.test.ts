import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import { PortcullisConfigError } from '../errors.js';
import { ipKey } from '../ip.js';
import { MemoryStore } from '../memory-store.js';
import { manualClock } from '../testing/manual-clock.js';
import type { GateResult } from './answer.js';
import { createAuthGate } from './auth-gate.js';
import { createRequestGate, type RequestResult } from './request-gate.js';

const raw = (ip: string): RawRequest => ({ socket: { remoteAddress: ip }, headers: {} });
/** The n-th /64 of the /48 2001:db8:aa::/48, in the /56 number `site`. */
const host = (site: number, n: number) => `2001:db8:aa:${((site << 8) | n).toString(16)}::1`;

describe('addresses that carry an IPv4 client', () => {
  it('are keyed by that IPv4 address, each its own bucket', () => {
    // NAT64 (RFC 6052 well-known prefix): the last 32 bits.
    expect(ipKey('64:ff9b::198.51.100.7')).toBe('198.51.100.7');
    expect(ipKey('64:ff9b::c633:6408')).toBe('198.51.100.8');
    // 6to4: the 32 bits after 2002::/16, whatever subnet and host follow.
    expect(ipKey('2002:c633:6407:1234::1')).toBe('198.51.100.7');
    expect(ipKey('2002:c633:6407:ffff::99')).toBe('198.51.100.7');
    // Teredo: the client's address is the last 32 bits, inverted (RFC 4380).
    expect(ipKey('2001:0:4136:e378:8000:63bf:39cc:9bf8')).toBe('198.51.100.7');
    // IPv4-mapped, as before.
    expect(ipKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
  });

  it('are not merged with their neighbours, and other IPv6 keeps its /64', () => {
    expect(ipKey('64:ff9b::198.51.100.9')).not.toBe(ipKey('64:ff9b::198.51.100.7'));
    expect(ipKey('2001:0:4136:e378:8000:63bf:39cc:9bf7')).toBe('198.51.100.8');
    // Only 64:ff9b::/96 is NAT64's well-known prefix: 64:ff9b:1::/48 is a local one, plain IPv6.
    expect(ipKey('64:ff9b:1::c633:6407')).toBe('64:ff9b:1::/64');
    expect(ipKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    // A full-address key stays the address.
    expect(ipKey('64:ff9b::198.51.100.7', false)).toBe('64:ff9b::c633:6407');
  });
});

describe('rateLimit ipv6Networks', () => {
  function gate(extra: Record<string, unknown> = {}) {
    const clock = manualClock(0);
    const g = createRequestGate({
      limit: 2,
      windowMs: 60_000,
      clock,
      timers: clock,
      ipv6Networks: true,
      ...extra,
    });
    return { clock, g, run: (ip: string) => g.run(raw(ip), {}) as RequestResult };
  }

  it('caps a client rotating through its /56 at 4 clients’ budget, with every policy advertised', () => {
    const { run } = gate();
    const first = run(host(1, 0));
    expect(first.ok).toBe(true);
    expect(first.decision.key).toBe('2001:db8:aa:100::/64');
    expect(first.headers).toEqual({
      'RateLimit-Policy':
        '"default";q=2;w=60, "default-ipv6-56";q=8;w=60, "default-ipv6-48";q=32;w=60',
      RateLimit: '"default";r=1;t=60, "default-ipv6-56";r=7;t=60, "default-ipv6-48";r=31;t=60',
    });
    // Seven more, each from a fresh /64 of the same /56: the /56 has 8 in all.
    for (let n = 1; n < 8; n++) expect(run(host(1, n)).ok).toBe(true);
    const refused = run(host(1, 8));
    expect(refused.ok).toBe(false);
    expect(refused.decision).toMatchObject({
      allowed: false,
      reason: 'limited',
      limit: 8,
      remaining: 0,
      key: '2001:db8:aa:100::/56',
    });
    expect(refused.answer?.status).toBe(429);
    expect(refused.headers['Retry-After']).toBe('60');
    // The /48 was not asked: a request its /56 refuses spends nothing wider.
    expect(refused.headers.RateLimit).toBe('"default";r=1;t=60, "default-ipv6-56";r=0;t=60');
    // Another /56 of the /48 still has its own budget.
    expect(run(host(2, 0)).ok).toBe(true);
  });

  it('caps the /48 at 16 clients’ budget across its /56s, and a refused request spends nothing wider', () => {
    const { run, clock } = gate();
    for (let site = 0; site < 4; site++)
      for (let n = 0; n < 8; n++) expect(run(host(site, n)).ok).toBe(true);
    const refused = run(host(9, 0));
    expect(refused.decision).toMatchObject({ allowed: false, limit: 32, key: '2001:db8:aa::/48' });
    // The refused /56 request above counted in its /56 but not again in the /48.
    expect(run(host(1, 9)).decision.key).toBe('2001:db8:aa:100::/56');
    clock.advance(60_000);
    expect(run(host(9, 0)).ok).toBe(true);
  });

  it('leaves IPv4 and IPv6 carrying IPv4 to their own budget only', () => {
    const { run } = gate();
    const v4 = run('198.51.100.7');
    expect(v4.headers).toEqual({
      'RateLimit-Policy': '"default";q=2;w=60',
      RateLimit: '"default";r=1;t=60',
    });
    // Eight NAT64 clients are eight IPv4 clients, not one IPv6 network.
    for (let i = 1; i <= 8; i++) {
      const r = run(`64:ff9b::198.51.100.${i + 10}`);
      expect(r.ok).toBe(true);
      expect(r.decision.key).toBe(`198.51.100.${i + 10}`);
    }
  });

  it('counts against a custom key too: networks follow the client address', () => {
    const { run } = gate({ key: () => 'one-tenant', limit: 100 });
    const r = run(host(1, 0));
    expect(r.decision.key).toBe('one-tenant');
    expect(r.headers['RateLimit-Policy']).toBe(
      '"default";q=100;w=60, "default-ipv6-56";q=400;w=60, "default-ipv6-48";q=1600;w=60',
    );
  });

  it('takes its own networks, narrowest first whatever the order given', () => {
    const { run } = gate({
      ipv6Networks: [
        { prefix: 48, factor: 3 },
        { prefix: 60, factor: 2 },
      ],
    });
    expect(run(host(1, 0)).headers['RateLimit-Policy']).toBe(
      '"default";q=2;w=60, "default-ipv6-60";q=4;w=60, "default-ipv6-48";q=6;w=60',
    );
  });

  it('follows reconfigure, and advertises legacy fields of the strictest policy', () => {
    const { g, run } = gate({ headers: 'legacy' });
    g.reconfigure({ limit: 3 });
    const r = run(host(1, 0));
    expect(r.headers['RateLimit-Policy']).toBe(
      '"default";q=3;w=60, "default-ipv6-56";q=12;w=60, "default-ipv6-48";q=48;w=60',
    );
    expect(r.headers['X-RateLimit-Limit']).toBe('3');
    expect(r.headers['X-RateLimit-Remaining']).toBe('2');
  });

  it('gives the networks’ units back with the client’s (skipSuccessfulRequests)', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const g = createRequestGate({
      limit: 1,
      clock,
      store,
      ipv6Networks: [{ prefix: 56, factor: 1 }],
      skipSuccessfulRequests: true,
    });
    const listeners: Record<string, () => void> = {};
    const res = {
      statusCode: 200,
      writableFinished: true,
      once: (e: 'close' | 'finish', l: () => void) => {
        listeners[e] = l;
      },
    };
    const first = g.run(raw(host(1, 0)), {}) as RequestResult;
    g.track(first, res, {}, res);
    listeners.finish?.();
    // Refunded in the client's bucket and in the /56's: a sibling /64 is allowed.
    const second = g.run(raw(host(1, 1)), {}) as RequestResult;
    expect(second.ok).toBe(true);
    expect((g.run(raw(host(1, 2)), {}) as RequestResult).decision.key).toBe('2001:db8:aa:100::/56');
  });

  it('refuses bad networks with ERR_PORTCULLIS_IPV6_NETWORKS', () => {
    const bad = [
      [],
      [{ prefix: 64, factor: 2 }],
      [{ prefix: 15, factor: 2 }],
      [{ prefix: 56, factor: 0 }],
      [{ prefix: 56, factor: 1.5 }],
      [{ prefix: 56 }],
      [{ prefix: 56, factor: 2, limit: 3 }],
      [
        { prefix: 56, factor: 2 },
        { prefix: 56, factor: 4 },
      ],
      'yes',
      56,
    ];
    for (const ipv6Networks of bad) {
      const err = (() => {
        try {
          createRequestGate({ ipv6Networks } as never);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err, JSON.stringify(ipv6Networks)).toBeInstanceOf(PortcullisConfigError);
      expect((err as PortcullisConfigError).code).toBe('ERR_PORTCULLIS_IPV6_NETWORKS');
    }
    expect(() => createRequestGate({ ipv6Networks: true, limit: () => 3 })).toThrow(
      /needs a fixed "limit" and "windowMs"/,
    );
    expect(() =>
      createRequestGate({ ipv6Networks: [{ prefix: 56, factor: 2 }], ipv6Subnet: 48 }),
    ).toThrow(/shorter than the client's \(ipv6Subnet 48\), got \/56/);
  });
});

describe('authGuard ipv6Networks', () => {
  function gate(extra: Record<string, unknown> = {}) {
    const clock = manualClock(0);
    const g = createAuthGate<{ token: string }>({
      verify: (r) => (r.token === 'right' ? 'ok' : 'invalid'),
      clock,
      timers: clock,
      ipv6Networks: true,
      ...extra,
    });
    return {
      clock,
      g,
      run: (ip: string, token = 'wrong') => g.run(raw(ip), { token }) as GateResult,
    };
  }

  it('locks a /56 after 40 wrong guesses spread over its /64s, for every client in it', () => {
    const { run, g } = gate();
    for (let i = 0; i < 40; i++) {
      const r = run(host(1, i % 200));
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.answer.status).toBe(401);
    }
    const locked = run(host(1, 201), 'right');
    expect(locked.ok).toBe(false);
    if (!locked.ok) {
      expect(locked.answer.status).toBe(429);
      expect(locked.decision).toMatchObject({ reason: 'locked', key: '2001:db8:aa:100::/56' });
    }
    expect(run(host(2, 0), 'right').ok).toBe(true);
    expect(g.networks.map((l) => l.config.name)).toEqual(['auth-ipv6-56', 'auth-ipv6-48']);
  });

  it('locks the /48 after 160 across its /56s; a success clears only the client', () => {
    const { run, g } = gate();
    for (let site = 0; site < 16; site++) for (let i = 0; i < 10; i++) run(host(site, i));
    const locked = run(host(20, 0), 'right');
    expect(locked.ok).toBe(false);
    expect(locked.decision).toMatchObject({ reason: 'locked', key: '2001:db8:aa::/48' });
    void g.networks[1]?.reset('2001:db8:aa::/48');
    expect(run(host(20, 0), 'right').ok).toBe(true);
  });

  it('uses the same networks for the layered client layer, and reports the lockout as the client layer', async () => {
    const events: unknown[] = [];
    const { run } = gate({
      ipv6Networks: [{ prefix: 56, factor: 1 }],
      account: () => 'alice',
      onLockout: (e: unknown) => events.push(e),
    });
    for (let i = 0; i < 10; i++) await run(host(1, i));
    const locked = (await run(host(1, 50), 'right')) as GateResult;
    expect(locked.ok).toBe(false);
    expect(locked.decision).toMatchObject({ layer: 'client', key: '2001:db8:aa:100::/56' });
    expect(events).toContainEqual(
      expect.objectContaining({ layer: 'client', key: '2001:db8:aa:100::/56', lockoutMs: 300_000 }),
    );
  });

  it('leaves loopback-exempt and IPv4 clients alone', () => {
    const { run, g } = gate();
    for (let i = 0; i < 30; i++) run('::1');
    expect(run('::1', 'right').ok).toBe(true);
    const r = run('198.51.100.7');
    expect(r.decision?.key).toBe('198.51.100.7');
    expect(g.networks.length).toBe(2);
  });

  it('refuses a network not wider than the client key', () => {
    expect(() =>
      createAuthGate({ verify: () => 'ok', ipv6Networks: [{ prefix: 64, factor: 2 }] }),
    ).toThrow(PortcullisConfigError);
  });
});
