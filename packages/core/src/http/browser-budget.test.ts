/*
 * Regression tests for the browser budgets (docs/design.md#browser-origins): each replays a way a
 * local page got more guesses than its budgets allow, and asserts the exact answers it gets now.
 */
import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import { createFailureLimiter } from '../failure-limiter.js';
import { MemoryStore } from '../memory-store.js';
import { manualClock } from '../testing/manual-clock.js';
import type { GateResult } from './answer.js';
import { type AuthGateOptions, createAuthGate } from './auth-gate.js';

interface Creds {
  token?: string;
}

const raw = (ip: string, headers: Record<string, string> = {}): RawRequest => ({
  socket: { remoteAddress: ip },
  headers,
});

const verify = (r: Creds) =>
  r.token === undefined ? 'missing' : r.token === 'right' ? 'ok' : 'invalid';

function authGate(extra: Partial<AuthGateOptions<Creds>> = {}) {
  const clock = manualClock(0);
  const gate = createAuthGate<Creds>({ verify, clock, timers: clock, ...extra });
  return { clock, gate };
}

const status = (r: GateResult) => (r.ok ? 200 : r.answer.status);

function tally(results: readonly GateResult[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of results) out[status(r)] = (out[status(r)] ?? 0) + 1;
  return out;
}

describe('a trailing dot names the same site', () => {
  it('p0.localhost. … p39.localhost. share the localhost site budget: 10 guesses, not 30', () => {
    const { gate } = authGate();
    const results: GateResult[] = [];
    for (let p = 0; p < 40; p++)
      results.push(
        gate.run(raw('127.0.0.1', { origin: `http://p${p}.localhost.:5173` }), {
          token: 'guess',
        }) as GateResult,
      );
    expect(tally(results)).toEqual({ 401: 10, 429: 30 });
    const refused = results[10] as GateResult;
    expect(!refused.ok && refused.decision).toMatchObject({
      reason: 'locked',
      key: 'browser-site:localhost',
      retryAfterMs: 300_000,
    });
    // The undotted spelling is the same site, so it is locked out too.
    const plain = gate.run(raw('127.0.0.1', { origin: 'http://p99.localhost:5173' }), {
      token: 'right',
    }) as GateResult;
    expect(status(plain)).toBe(429);
  });

  it('dotted and undotted subdomains of a registrable domain count in one site budget', () => {
    const { gate } = authGate({ browserBudget: { perSite: 4, allOrigins: 100 } });
    const hosts = ['a.evil.example.', 'b.evil.example', 'c.evil.example..', 'evil.example.'];
    for (const h of hosts)
      expect(
        status(
          gate.run(raw('127.0.0.1', { origin: `https://${h}` }), { token: 'guess' }) as GateResult,
        ),
      ).toBe(401);
    const next = gate.run(raw('127.0.0.1', { origin: 'https://d.evil.example.' }), {
      token: 'right',
    }) as GateResult;
    expect(!next.ok && next.decision).toMatchObject({
      reason: 'locked',
      key: 'browser-site:evil.example',
    });
    // Another site is untouched.
    expect(
      status(
        gate.run(raw('127.0.0.1', { origin: 'https://app.good.example.' }), {
          token: 'right',
        }) as GateResult,
      ),
    ).toBe(200);
  });
});

describe('the all-origins budget is never the key a small store evicts', () => {
  it.each([[1], [10], [29]])(
    'maxEntries %i: 300 sites get 30 × 401, then 429, never 300 × 401',
    (maxEntries) => {
      const { gate } = authGate({ maxEntries });
      const results: GateResult[] = [];
      for (let s = 0; s < 300; s++)
        results.push(
          gate.run(raw('127.0.0.1', { origin: `https://s${s}.example` }), {
            token: 'guess',
          }) as GateResult,
        );
      expect(tally(results)).toEqual({ 401: 30, 429: 270 });
      const refused = results[30] as GateResult;
      expect(!refused.ok && refused.decision).toMatchObject({
        reason: 'locked',
        key: 'browser-origins:all',
        retryAfterMs: 300_000,
      });
      // A site never seen before is refused as well: the flood could not flush the budget.
      const fresh = gate.run(raw('127.0.0.1', { origin: 'https://fresh.example' }), {
        token: 'right',
      }) as GateResult;
      expect(!fresh.ok && fresh.decision?.key).toBe('browser-origins:all');
    },
  );
});

describe('browser lockouts belong to the limiter’s store, not to the gate', () => {
  const page = raw('127.0.0.1', { origin: 'http://app.localhost:5173' });

  /** Ten wrong guesses from `page` through `gate`: its origin and site are locked out. */
  async function lockOut(gate: ReturnType<typeof createAuthGate<Creds>>): Promise<void> {
    for (let i = 0; i < 10; i++) await gate.run(page, { token: 'guess' });
  }

  it('a gate rebuilt around the same limiter after closing its browser limiter still refuses the locked origin', async () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ clock, timers: clock });
    const first = createAuthGate<Creds>({ verify, limiter });
    await lockOut(first);
    clock.advance(1_000);
    // What createConnectAuth's and guardUpgrade's close() do with the browser limiter they built.
    await first.browserLimiter.close();
    const again = createAuthGate<Creds>({ verify, limiter });
    const r = again.run(page, { token: 'right' }) as GateResult;
    expect(!r.ok && r.answer.status).toBe(429);
    expect(!r.ok && r.decision).toMatchObject({
      reason: 'locked',
      key: 'browser-origin:http://app.localhost:5173',
      retryAfterMs: 299_000,
    });
    // The site budget was kept too: another page of the site is refused.
    const sibling = again.run(raw('127.0.0.1', { origin: 'http://other.localhost' }), {
      token: 'right',
    }) as GateResult;
    expect(!sibling.ok && sibling.decision).toMatchObject({
      key: 'browser-site:localhost',
      retryAfterMs: 299_000,
    });
    // Non-browser clients are untouched.
    expect((again.run(raw('203.0.113.5'), { token: 'right' }) as GateResult).ok).toBe(true);
    await limiter.close();
  });

  it('a gate rebuilt over the same store (a reloaded authGuard) still refuses the locked origin', async () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const first = createAuthGate<Creds>({ verify, store });
    await lockOut(first);
    await first.browserLimiter.close();
    const again = createAuthGate<Creds>({ verify, store });
    const r = again.run(page, { token: 'right' }) as GateResult;
    expect(!r.ok && r.decision).toMatchObject({
      reason: 'locked',
      key: 'browser-origin:http://app.localhost:5173',
      retryAfterMs: 300_000,
    });
    store.close();
  });

  it('the all-origins budget survives a rebuilt gate as well', async () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ clock, timers: clock });
    const first = createAuthGate<Creds>({ verify, limiter });
    for (let s = 0; s < 30; s++)
      await first.run(raw('127.0.0.1', { origin: `https://s${s}.example` }), { token: 'guess' });
    await first.browserLimiter.close();
    const again = createAuthGate<Creds>({ verify, limiter });
    const r = again.run(raw('127.0.0.1', { origin: 'https://new.example' }), {
      token: 'right',
    }) as GateResult;
    expect(!r.ok && r.decision).toMatchObject({
      key: 'browser-origins:all',
      retryAfterMs: 300_000,
    });
    await limiter.close();
  });

  it('a gate that built its own store releases every browser store when closed: no timer is left', async () => {
    const { clock, gate } = authGate();
    for (let s = 0; s < 3; s++)
      await gate.run(raw('127.0.0.1', { origin: `https://s${s}.example` }), { token: 'guess' });
    await gate.run(raw('203.0.113.5'), { token: 'guess' });
    // The main store, the browser store, the site budgets' and the all-origins budget's.
    expect(clock.pendingTimers()).toBe(4);
    await gate.limiter.close();
    await gate.browserLimiter.close();
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('a local page that sends no Origin is a browser, not a direct-local CLI', () => {
  it.each([
    ['cross-site', 'no-cors'],
    ['same-origin', 'cors'],
    ['none', 'navigate'],
  ])('Sec-Fetch-Site: %s (%s): 10 × 401, then 429, never unlimited', (site, mode) => {
    const { gate } = authGate();
    const tag = raw('127.0.0.1', { 'sec-fetch-site': site, 'sec-fetch-mode': mode });
    const results: GateResult[] = [];
    for (let i = 0; i < 20; i++) results.push(gate.run(tag, { token: 'guess' }) as GateResult);
    expect(tally(results)).toEqual({ 401: 10, 429: 10 });
    const refused = results[10] as GateResult;
    expect(!refused.ok && refused.decision).toMatchObject({
      reason: 'locked',
      retryAfterMs: 300_000,
    });
    expect(!refused.ok && refused.answer.headers).toEqual({
      'Content-Type': 'application/json; charset=utf-8',
      'Retry-After': '300',
    });
    // The CLI on the same machine is still direct-local and exempt.
    const cli = gate.run(raw('127.0.0.1'), { token: 'right' }) as GateResult;
    expect(cli.ok && cli.decision).toMatchObject({ reason: 'exempt' });
    // So is Node's fetch, which sends Sec-Fetch-Mode but never Sec-Fetch-Site.
    const nodeFetch = gate.run(raw('127.0.0.1', { 'sec-fetch-mode': 'cors' }), {
      token: 'guess',
    }) as GateResult;
    expect(!nodeFetch.ok && nodeFetch.answer.status).toBe(401);
    expect(nodeFetch.decision).toMatchObject({ reason: 'exempt' });
  });

  it('counts in the browser budgets under browser-origin:null, never in the non-browser limiter', async () => {
    const { gate } = authGate();
    for (let i = 0; i < 10; i++)
      await gate.run(raw('127.0.0.1', { 'sec-fetch-site': 'cross-site' }), { token: 'guess' });
    expect(gate.browserLimiter.check('browser-origin:null')).toMatchObject({ reason: 'locked' });
    expect(gate.limiter.check('127.0.0.1')).toMatchObject({ reason: 'exempt' });
    const sandboxed = gate.run(raw('127.0.0.1', { origin: 'null' }), {
      token: 'right',
    }) as GateResult;
    expect(!sandboxed.ok && sandboxed.answer.status).toBe(429);
  });
});
