import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it, vi } from 'vitest';
import { manualClock } from './testing/manual-clock.js';
import { createFailureLimiter, type FailureLimiterOptions } from './failure-limiter.js';
import { MemoryStore } from './memory-store.js';

function limiter(options: Omit<FailureLimiterOptions, 'store'> = {}) {
  const clock = manualClock(0);
  return { clock, limiter: createFailureLimiter({ clock, timers: clock, ...options }) };
}

const locked = (retryAfterMs: number, key: string, limit = 10) => ({
  allowed: false,
  reason: 'locked',
  limit,
  remaining: 0,
  retryAfterMs,
  resetMs: retryAfterMs,
  key,
});

describe('createFailureLimiter (gateway defaults: 10 / 60 s → 300 s)', () => {
  it('the 10th failure starts the lockout; the 11th attempt is refused', () => {
    const { limiter: l } = limiter();
    for (let i = 1; i <= 9; i++) {
      expect(l.check('203.0.113.7')).toMatchObject({ allowed: true, remaining: 11 - i });
      expect(l.recordFailure('203.0.113.7')).toEqual({
        allowed: true,
        reason: 'allowed',
        limit: 10,
        remaining: 10 - i,
        retryAfterMs: 0,
        resetMs: 60_000,
        key: '203.0.113.7',
      });
    }
    expect(l.check('203.0.113.7')).toMatchObject({ allowed: true, remaining: 1 });
    expect(l.recordFailure('203.0.113.7')).toEqual(locked(300_000, '203.0.113.7'));
    expect(l.check('203.0.113.7')).toEqual(locked(300_000, '203.0.113.7'));
  });

  it('failures during a lockout neither count nor extend it; when it ends the history is gone', () => {
    const { clock, limiter: l } = limiter();
    for (let i = 0; i < 10; i++) l.recordFailure('198.51.100.1');
    clock.advance(100_000);
    expect(l.recordFailure('198.51.100.1')).toEqual(locked(200_000, '198.51.100.1'));
    clock.advance(199_999);
    expect(l.check('198.51.100.1')).toEqual(locked(1, '198.51.100.1'));
    clock.advance(1);
    expect(l.check('198.51.100.1')).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 10,
      remaining: 10,
      retryAfterMs: 0,
      resetMs: 0,
      key: '198.51.100.1',
    });
  });

  it('a failure exactly windowMs old has expired', () => {
    const { clock, limiter: l } = limiter();
    for (let i = 0; i < 9; i++) l.recordFailure('192.0.2.1');
    clock.advance(60_000);
    expect(l.recordFailure('192.0.2.1')).toMatchObject({ allowed: true, remaining: 9 });
    clock.advance(59_999);
    for (let i = 0; i < 8; i++) l.recordFailure('192.0.2.1');
    expect(l.recordFailure('192.0.2.1')).toEqual(locked(300_000, '192.0.2.1'));
  });

  it('scopes are independent and blank means default', () => {
    const { limiter: l } = limiter();
    for (let i = 0; i < 10; i++) l.recordFailure('192.0.2.9', 'device-token');
    expect(l.check('192.0.2.9', 'device-token').allowed).toBe(false);
    expect(l.check('192.0.2.9', 'shared-secret')).toMatchObject({ allowed: true, remaining: 10 });
    expect(l.check('192.0.2.9')).toMatchObject({ allowed: true, remaining: 10 });
    l.recordFailure('192.0.2.9', '  ');
    expect(l.check('192.0.2.9', 'default')).toMatchObject({ remaining: 9 });
  });

  it('recordSuccess resets that scope and subject only', () => {
    const { limiter: l } = limiter();
    for (let i = 0; i < 5; i++) {
      l.recordFailure('192.0.2.2', 'a');
      l.recordFailure('192.0.2.2', 'b');
    }
    expect(l.recordSuccess('192.0.2.2', 'a')).toMatchObject({
      allowed: true,
      remaining: 10,
      reason: 'allowed',
    });
    expect(l.check('192.0.2.2', 'a')).toMatchObject({ remaining: 10 });
    expect(l.check('192.0.2.2', 'b')).toMatchObject({ remaining: 5 });
  });

  it('canonicalises subjects: IPv4-mapped is IPv4, IPv6 keyed by /64 unless told otherwise', () => {
    const { limiter: l } = limiter();
    l.recordFailure('::ffff:203.0.113.5');
    expect(l.check('203.0.113.5')).toMatchObject({ remaining: 9, key: '203.0.113.5' });
    l.recordFailure('2001:DB8:0:1::1');
    expect(l.check('2001:db8:0:1:ffff::9')).toMatchObject({
      remaining: 9,
      key: '2001:db8:0:1::/64',
    });
    const { limiter: full } = limiter({ ipv6Subnet: false });
    full.recordFailure('2001:db8:0:1::1');
    expect(full.check('2001:db8:0:1::2')).toMatchObject({ remaining: 10, key: '2001:db8:0:1::2' });
    const { limiter: wide } = limiter({ ipv6Subnet: 48 });
    expect(wide.recordFailure('2001:db8:7:1::1')).toMatchObject({ key: '2001:db8:7::/48' });
  });

  it('exempts loopback strings only when exemptLoopback is on; opaque keys never', () => {
    const { limiter: l } = limiter();
    for (let i = 0; i < 20; i++) {
      expect(l.recordFailure('127.0.0.1')).toMatchObject({ allowed: true, reason: 'exempt' });
      expect(l.recordFailure('::1')).toMatchObject({ reason: 'exempt' });
      expect(l.recordFailure('::ffff:127.0.0.2')).toMatchObject({
        reason: 'exempt',
        key: '127.0.0.2',
      });
    }
    expect(l.recordFailure({ key: '127.0.0.1', exempt: false })).toMatchObject({
      reason: 'allowed',
      remaining: 9,
    });
    for (let i = 0; i < 9; i++) l.recordFailure('browser-origin:http://localhost:5173');
    expect(l.recordFailure('browser-origin:http://localhost:5173')).toMatchObject({
      reason: 'locked',
    });
    expect(l.recordFailure({ key: 'identity:alice', exempt: true })).toMatchObject({
      reason: 'allowed',
    });
    const { limiter: strict } = limiter({ exemptLoopback: false });
    expect(strict.recordFailure('127.0.0.1')).toMatchObject({ reason: 'allowed', remaining: 9 });
    expect(strict.recordFailure({ key: '127.0.0.1', exempt: true })).toMatchObject({
      reason: 'allowed',
      remaining: 8,
    });
  });

  it('one client locked out leaves other clients and loopback unaffected', () => {
    const { limiter: l } = limiter();
    for (let i = 0; i < 10; i++) l.recordFailure('203.0.113.66');
    expect(l.check('203.0.113.66').allowed).toBe(false);
    expect(l.check('203.0.113.67')).toMatchObject({ allowed: true, remaining: 10 });
    expect(l.check('127.0.0.1')).toMatchObject({ allowed: true, reason: 'exempt' });
  });

  it('logs one AUTH_RATE_LIMITED warning with scope and key per lockout, and publishes it', () => {
    const warn = vi.fn();
    const events: unknown[] = [];
    const onLockout = (m: unknown) => events.push(m);
    subscribe('portcullis:lockout', onLockout);
    try {
      const { limiter: l } = limiter({ logger: { warn, error: vi.fn() } });
      for (let i = 0; i < 15; i++) l.recordFailure('203.0.113.9', 'device-token');
      expect(warn).toHaveBeenCalledTimes(1);
      const [obj, msg] = warn.mock.calls[0] as [Record<string, unknown>, string];
      expect(msg).toContain('AUTH_RATE_LIMITED');
      expect(msg).toContain('device-token');
      expect(msg).toBe(
        'AUTH_RATE_LIMITED: 10 failed attempts (client layer); locking out scope=device-token key=203.0.113.9 for 300000ms',
      );
      expect(obj).toStrictEqual({
        code: 'AUTH_RATE_LIMITED',
        limiter: 'auth',
        scope: 'device-token',
        key: '203.0.113.9',
        layer: 'client',
        lockoutMs: 300_000,
        dryRun: false,
      });
      expect(events).toEqual([
        { limiter: 'auth', scope: 'device-token', decision: locked(300_000, '203.0.113.9') },
      ]);
    } finally {
      unsubscribe('portcullis:lockout', onLockout);
    }
  });

  it('dry run counts and locks but never refuses', () => {
    const warn = vi.fn();
    const { limiter: l } = limiter({ dryRun: true, logger: { warn, error: vi.fn() } });
    for (let i = 0; i < 9; i++) l.recordFailure('203.0.113.10');
    expect(l.recordFailure('203.0.113.10')).toEqual({
      ...locked(0, '203.0.113.10'),
      allowed: true,
      resetMs: 300_000,
      dryRun: true,
    });
    expect(l.check('203.0.113.10')).toMatchObject({
      allowed: true,
      reason: 'locked',
      dryRun: true,
    });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[1]).toContain('dry run');
  });

  it('refuses new keys with overflow when every entry is locked, and never forgets a lockout', () => {
    const clock = manualClock(0);
    const l = createFailureLimiter({
      maxAttempts: 1,
      lockoutMs: 10_000,
      maxEntries: 3,
      clock,
      timers: clock,
    });
    for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3'])
      expect(l.recordFailure(ip).reason).toBe('locked');
    clock.advance(4_000);
    expect(l.check('10.0.0.4')).toEqual({
      allowed: false,
      reason: 'overflow',
      limit: 1,
      remaining: 0,
      retryAfterMs: 6_000,
      resetMs: 6_000,
      key: '10.0.0.4',
    });
    expect(l.recordFailure('10.0.0.4').reason).toBe('overflow');
    expect(l.check('10.0.0.1')).toEqual(locked(6_000, '10.0.0.1', 1));
    clock.advance(6_000);
    expect(l.check('10.0.0.4')).toMatchObject({ allowed: true, reason: 'allowed' });
  });

  it('rejects bad options with stable codes', () => {
    const bad: [unknown, string][] = [
      [{ maxAttempts: 0 }, 'ERR_PORTCULLIS_MAX_ATTEMPTS'],
      [{ maxAttempts: 1.5 }, 'ERR_PORTCULLIS_MAX_ATTEMPTS'],
      [{ windowMs: -1 }, 'ERR_PORTCULLIS_WINDOW_MS'],
      [{ windowMs: Number.NaN }, 'ERR_PORTCULLIS_WINDOW_MS'],
      [{ lockoutMs: Number.POSITIVE_INFINITY }, 'ERR_PORTCULLIS_LOCKOUT_MS'],
      [{ lockoutMs: '300000' }, 'ERR_PORTCULLIS_LOCKOUT_MS'],
      [{ exemptLoopback: 'yes' }, 'ERR_PORTCULLIS_EXEMPT_LOOPBACK'],
      [{ ipv6Subnet: 0 }, 'ERR_PORTCULLIS_IPV6_SUBNET'],
      [{ ipv6Subnet: true }, 'ERR_PORTCULLIS_IPV6_SUBNET'],
      [{ maxEntries: 0 }, 'ERR_PORTCULLIS_MAX_ENTRIES'],
      [{ store: {} }, 'ERR_PORTCULLIS_STORE'],
      [{ clock: () => 0 }, 'ERR_PORTCULLIS_CLOCK'],
      [{ logger: console.log }, 'ERR_PORTCULLIS_LOGGER'],
      [{ maxAttemps: 5 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
      [{ store: new MemoryStore(), maxEntries: 5 }, 'ERR_PORTCULLIS_MAX_ENTRIES'],
      ['fast', 'ERR_PORTCULLIS_INVALID_OPTIONS'],
    ];
    for (const [options, code] of bad) {
      expect(
        () => createFailureLimiter(options as FailureLimiterOptions),
        JSON.stringify(options),
      ).toThrow(expect.objectContaining({ name: 'PortcullisConfigError', code }));
    }
  });

  it('namespaces keys when sharing a store and bounds huge keys', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const a = createFailureLimiter({ store, name: 'a', maxAttempts: 2 });
    const b = createFailureLimiter({ store, name: 'b', maxAttempts: 2 });
    a.recordFailure('192.0.2.1');
    a.recordFailure('192.0.2.1');
    expect(a.check('192.0.2.1').allowed).toBe(false);
    expect(b.check('192.0.2.1')).toMatchObject({ allowed: true, remaining: 2 });
    const huge = `identity:${'x'.repeat(100_000)}`;
    const d = a.recordFailure(huge);
    expect(d.key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a.check(`${huge}y`)).toMatchObject({ remaining: 2 });
    expect(a.check(huge)).toMatchObject({ remaining: 1 });
  });
});

describe('createFailureLimiter: dry run and overflow warnings', () => {
  it('exempt decisions of a dry-run limiter are flagged too', async () => {
    const l = createFailureLimiter({ dryRun: true });
    expect(l.check('127.0.0.1')).toEqual({
      allowed: true,
      reason: 'exempt',
      limit: 10,
      remaining: 10,
      retryAfterMs: 0,
      resetMs: 0,
      key: '127.0.0.1',
      dryRun: true,
    });
    await l.close();
  });

  it('warns once per episode of a table full of lockouts', () => {
    const clock = manualClock(0);
    const warn = vi.fn();
    const l = createFailureLimiter({
      maxAttempts: 1,
      lockoutMs: 1000,
      maxEntries: 1,
      clock,
      timers: clock,
      logger: { warn, error: vi.fn() },
    });
    l.recordFailure('10.0.0.1');
    l.check('10.0.0.2');
    l.check('10.0.0.3');
    expect(
      warn.mock.calls.filter((c) => (c[0] as { code: string }).code === 'PORTCULLIS_OVERFLOW'),
    ).toHaveLength(1);
    clock.advance(1000);
    l.check('10.0.0.2');
    l.recordFailure('10.0.0.2');
    l.check('10.0.0.3');
    expect(
      warn.mock.calls.filter((c) => (c[0] as { code: string }).code === 'PORTCULLIS_OVERFLOW'),
    ).toHaveLength(2);
  });

  it('alternating a new client and a locked one does not flood the log: one PORTCULLIS_OVERFLOW per episode', async () => {
    const clock = manualClock(0);
    const warn = vi.fn();
    const l = createFailureLimiter({
      maxAttempts: 1,
      lockoutMs: 60_000,
      maxEntries: 3,
      clock,
      timers: clock,
      logger: { warn, error: vi.fn() },
    });
    const overflows = () =>
      warn.mock.calls.filter((c) => (c[0] as { code: string }).code === 'PORTCULLIS_OVERFLOW');
    for (let i = 1; i <= 3; i++) expect(l.recordFailure(`10.0.0.${i}`).reason).toBe('locked');
    const reasons = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const d = i % 2 === 0 ? l.recordFailure(`10.1.${i >> 8}.${i & 255}`) : l.check('10.0.0.1');
      reasons.set(d.reason, (reasons.get(d.reason) ?? 0) + 1);
    }
    expect(Object.fromEntries(reasons)).toEqual({ overflow: 500, locked: 500 });
    expect(overflows()).toHaveLength(1);
    // The lockouts end: a new key is taken, the episode is over; the next flood warns again.
    clock.advance(60_000);
    expect(l.check('10.2.0.1')).toMatchObject({ reason: 'allowed', remaining: 1 });
    for (let i = 1; i <= 3; i++) l.recordFailure(`10.3.0.${i}`);
    expect(l.check('10.3.0.9').reason).toBe('overflow');
    expect(l.check('10.3.0.1').reason).toBe('locked');
    expect(l.check('10.3.0.10').reason).toBe('overflow');
    expect(overflows()).toHaveLength(2);
    await l.close();
  });
});

describe('createFailureLimiter: lockouts() and ban()', () => {
  const T0 = 1_700_000_000_000;

  it('lists the lockouts in force, soonest end first, by scope, with their layer', async () => {
    const clock = manualClock(T0);
    const l = createFailureLimiter({ maxAttempts: 2, clock, timers: clock });
    for (let i = 0; i < 2; i++) l.recordFailure('203.0.113.1', 'shared-secret');
    clock.advance(1000);
    for (let i = 0; i < 2; i++) l.recordFailure('2001:db8::1', 'device-token');
    l.recordFailure('203.0.113.2'); // one failure: not a lockout
    expect(l.ban('198.51.100.7', { ms: 60_000 })).toMatchObject({
      allowed: false,
      reason: 'locked',
      retryAfterMs: 60_000,
      key: '198.51.100.7',
    });
    expect(l.lockouts()).toEqual([
      {
        scope: 'default',
        key: '198.51.100.7',
        layer: 'ban',
        until: T0 + 61_000,
        retryAfterMs: 60_000,
      },
      {
        scope: 'shared-secret',
        key: '203.0.113.1',
        layer: 'client',
        until: T0 + 300_000,
        retryAfterMs: 299_000,
      },
      {
        scope: 'device-token',
        key: '2001:db8::/64',
        layer: 'client',
        until: T0 + 301_000,
        retryAfterMs: 300_000,
      },
    ]);
    expect(l.lockouts({ scope: 'device-token' })).toEqual([
      {
        scope: 'device-token',
        key: '2001:db8::/64',
        layer: 'client',
        until: T0 + 301_000,
        retryAfterMs: 300_000,
      },
    ]);
    expect(l.lockouts({ limit: 1 }).map((x) => x.key)).toEqual(['198.51.100.7']);
    // reset is the unlock: gone from the list, the client may try again.
    l.reset('203.0.113.1', 'shared-secret');
    expect(l.lockouts({ scope: 'shared-secret' })).toEqual([]);
    expect(l.check('203.0.113.1', 'shared-secret')).toMatchObject({ allowed: true, remaining: 2 });
    clock.advance(60_000);
    expect(l.lockouts().map((x) => x.key)).toEqual(['2001:db8::/64']);
    await l.close();
  });

  it('a ban refuses like a lockout, lasts its own ms past lockoutMs, and never shortens one in force', async () => {
    const clock = manualClock(T0);
    const l = createFailureLimiter({ maxAttempts: 2, lockoutMs: 60_000, clock, timers: clock });
    l.ban('203.0.113.5', { ms: 3_600_000 });
    // Failures during it neither count nor extend it; a right credential does not lift it.
    expect(l.recordFailure('203.0.113.5')).toMatchObject({
      reason: 'locked',
      retryAfterMs: 3_600_000,
    });
    expect(l.recordSuccess('203.0.113.5')).toMatchObject({
      reason: 'locked',
      retryAfterMs: 3_600_000,
    });
    clock.advance(600_000);
    expect(l.check('203.0.113.5')).toMatchObject({ reason: 'locked', retryAfterMs: 3_000_000 });
    // A clock that steps back bounds a ban by its own length, not by lockoutMs.
    clock.set(T0 - 10_000_000);
    expect(l.check('203.0.113.5')).toMatchObject({ reason: 'locked', retryAfterMs: 3_600_000 });
    clock.set(T0);
    // An earned lockout that ends later is kept by a shorter ban (and stays 'client').
    l.recordFailure('203.0.113.6');
    l.recordFailure('203.0.113.6');
    expect(l.ban('203.0.113.6', { ms: 1000 })).toMatchObject({ retryAfterMs: 60_000 });
    expect(l.lockouts().find((x) => x.key === '203.0.113.6')?.layer).toBe('client');
    // A longer ban replaces it.
    expect(l.ban('203.0.113.6', { ms: 120_000 })).toMatchObject({ retryAfterMs: 120_000 });
    expect(l.lockouts().find((x) => x.key === '203.0.113.6')?.layer).toBe('ban');
    clock.advance(120_000);
    expect(l.check('203.0.113.6')).toMatchObject({ allowed: true, remaining: 2 });
    await l.close();
  });

  it('a loopback-exempt subject stays exempt; bad options are config errors', async () => {
    const clock = manualClock(T0);
    const l = createFailureLimiter({ clock, timers: clock });
    expect(l.ban('127.0.0.1', { ms: 1000 })).toMatchObject({ allowed: true, reason: 'exempt' });
    expect(l.lockouts()).toEqual([]);
    for (const [options, code] of [
      [{}, 'ERR_PORTCULLIS_MS'],
      [{ ms: 0 }, 'ERR_PORTCULLIS_MS'],
      [{ ms: 2 ** 31 }, 'ERR_PORTCULLIS_MS'],
      [{ ms: 1.5 }, 'ERR_PORTCULLIS_MS'],
      [{ ms: 1000, scope: 5 }, 'ERR_PORTCULLIS_SCOPE'],
      [{ ms: 1000, for: 5 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
    ] as const)
      expect(() => l.ban('203.0.113.1', options as never)).toThrow(
        expect.objectContaining({ code }),
      );
    expect(() => l.lockouts({ limit: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMIT' }),
    );
    await l.close();
  });
});
