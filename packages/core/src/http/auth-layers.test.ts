import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import { authRateLimitedError } from '../error-shapes.js';
import { PortcullisConfigError } from '../errors.js';
import { MemoryStore } from '../memory-store.js';
import type { Store } from '../store.js';
import { manualClock } from '../testing/manual-clock.js';
import type { GateResult } from './answer.js';
import { type AuthGateOptions, type AuthOutcome, createAuthGate } from './auth-gate.js';
import type { LockoutEvent } from './auth-layer-options.js';

const raw = (ip: string, headers: Record<string, string> = {}): RawRequest => ({
  socket: { remoteAddress: ip },
  headers,
});

interface Login {
  user?: unknown;
  password?: string | undefined;
}

/** A gate over a manual clock; `verify` accepts the password `right`. */
function setup(extra: Partial<AuthGateOptions<Login>> = {}) {
  const clock = manualClock(1_000_000);
  const events: LockoutEvent[] = [];
  const gate = createAuthGate<Login>({
    verify: (r) =>
      r.password === undefined ? 'missing' : r.password === 'right' ? 'ok' : 'invalid',
    account: (r) => r.user as string | undefined,
    scope: 'password',
    clock,
    timers: clock,
    onLockout: (e) => events.push(e),
    ...extra,
  });
  const attempt = (ip: string, user: unknown, password: string | undefined) =>
    gate.run(raw(ip), { user, password }) as GateResult;
  return { clock, gate, attempt, events };
}

function status(r: GateResult): number {
  return r.ok ? 200 : r.answer.status;
}

/** The one answer every layer gives: 429, Retry-After, the AUTH_RATE_LIMITED body. */
function expectRateLimited(r: GateResult, retryAfterMs: number, layer: Decision['layer']) {
  expect(r.ok).toBe(false);
  if (r.ok) return;
  expect(r.reason).toBe('rate_limited');
  expect(r.answer).toEqual({
    status: 429,
    headers: {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
      'Content-Type': 'application/json; charset=utf-8',
    },
    body: JSON.stringify(authRateLimitedError(retryAfterMs)),
  });
  expect(r.decision?.layer).toBe(layer);
  expect(r.decision?.retryAfterMs).toBe(retryAfterMs);
}

describe('auth layers (docs/design.md#defence-in-depth)', () => {
  it('pair: the 20th consecutive failure of one client against one account locks that pair only, for an hour', () => {
    const { attempt, clock, events } = setup({ maxAttempts: 1000 });
    for (let i = 0; i < 20; i++) expect(status(attempt('203.0.113.5', 'alice', 'x'))).toBe(401);
    expect(events).toEqual([
      {
        layer: 'pair',
        scope: 'password',
        key: '203.0.113.5',
        account: 'alice',
        lockoutMs: 3_600_000,
        until: 1_000_000 + 3_600_000,
      },
    ]);
    clock.advance(1000);
    // Refused even with the right password; other accounts of the client and other clients of
    // the account are untouched.
    expectRateLimited(attempt('203.0.113.5', 'alice', 'right'), 3_599_000, 'pair');
    expect(status(attempt('203.0.113.5', 'bob', 'right'))).toBe(200);
    expect(status(attempt('198.51.100.7', 'alice', 'right'))).toBe(200);
    clock.advance(3_599_000);
    expect(status(attempt('203.0.113.5', 'alice', 'right'))).toBe(200);
  });

  it('pair: a success clears the pair; alternating accounts does not reset it', () => {
    const { attempt } = setup({ maxAttempts: 1000 });
    for (let i = 0; i < 19; i++) attempt('203.0.113.6', 'alice', 'x');
    expect(status(attempt('203.0.113.6', 'alice', 'right'))).toBe(200);
    for (let i = 0; i < 19; i++) {
      expect(status(attempt('203.0.113.6', 'alice', 'x'))).toBe(401);
      // Another account between: the pair counts consecutive failures of this pair, not of the client.
      expect(status(attempt('203.0.113.6', 'carol', 'right'))).toBe(200);
    }
    expect(status(attempt('203.0.113.6', 'alice', 'x'))).toBe(401);
    expectRateLimited(attempt('203.0.113.6', 'alice', 'right'), 3_600_000, 'pair');
  });

  it('spray: failures against 10 distinct accounts lock the client for every account', () => {
    const { attempt, events, clock } = setup({ maxAttempts: 1000 });
    for (let i = 0; i < 10; i++) {
      expect(status(attempt('203.0.113.7', `user${i}`, 'x'))).toBe(401);
      if (i === 9) break;
      // The same account again counts once.
      expect(status(attempt('203.0.113.7', `user${i}`, 'x'))).toBe(401);
      clock.advance(10);
    }
    expect(events.map((e) => [e.layer, e.key, e.lockoutMs])).toEqual([
      ['spray', '203.0.113.7', 3_600_000],
    ]);
    expectRateLimited(attempt('203.0.113.7', 'newcomer', 'right'), 3_600_000, 'spray');
    expect(status(attempt('198.51.100.8', 'user0', 'right'))).toBe(200);
  });

  it('account: 100 failures from many clients put the account under attack; only trusted clients pass', () => {
    const { attempt, clock, events } = setup();
    expect(status(attempt('192.0.2.1', 'alice', 'right'))).toBe(200);
    clock.advance(1000);
    for (let i = 0; i < 100; i++)
      expect(status(attempt(`10.0.${i >> 8}.${i & 255}`, 'alice', 'x'))).toBe(401);
    expect(events).toEqual([
      {
        layer: 'account',
        scope: 'password',
        key: 'account:alice',
        account: 'alice',
        lockoutMs: 3_600_000,
        until: 1_001_000 + 3_600_000,
      },
    ]);
    // A client never seen to log in is refused, right password or not; the trusted one passes.
    expectRateLimited(attempt('10.9.9.9', 'alice', 'right'), 3_600_000, 'account');
    expect(status(attempt('192.0.2.1', 'alice', 'right'))).toBe(200);
    // A trusted client's wrong password is still an ordinary 401.
    expect(status(attempt('192.0.2.1', 'alice', 'x'))).toBe(401);
    // Other accounts are not under attack.
    expect(status(attempt('10.9.9.9', 'bob', 'right'))).toBe(200);
    clock.advance(3_600_000);
    expect(status(attempt('10.9.9.9', 'alice', 'right'))).toBe(200);
  });

  it('scope: the budget puts the whole scope under attack; scope or account trust passes, a throwaway account does not open a victim', () => {
    const { attempt } = setup({
      scopeBudget: { maxAttempts: 50, windowMs: 60_000, lockoutMs: 600_000 },
      accountLimits: { account: { maxAttempts: 40 } },
    });
    expect(status(attempt('192.0.2.10', 'alice', 'right'))).toBe(200);
    // The attacker's own account: success earns it scope trust, and account trust for mallory only.
    expect(status(attempt('198.51.100.66', 'mallory', 'right'))).toBe(200);
    for (let i = 0; i < 50; i++) attempt(`10.1.0.${i}`, `victim${i % 5}`, 'x');
    expectRateLimited(attempt('10.2.0.1', 'dave', 'right'), 600_000, 'scope');
    expect(status(attempt('192.0.2.10', 'alice', 'right'))).toBe(200);
    expect(status(attempt('192.0.2.10', 'erin', 'right'))).toBe(200);
  });

  it('scope trust from a throwaway account never passes an account under attack', () => {
    const { attempt } = setup({
      maxAttempts: 1000,
      scopeBudget: { maxAttempts: 10_000, windowMs: 60_000, lockoutMs: 600_000 },
      accountLimits: { account: { maxAttempts: 5 } },
    });
    for (let i = 0; i < 5; i++) attempt(`10.3.0.${i}`, 'victim', 'x');
    expect(status(attempt('198.51.100.66', 'mallory', 'right'))).toBe(200);
    expectRateLimited(attempt('198.51.100.66', 'victim', 'right'), 3_600_000, 'account');
  });

  it('every layer answers the same way as the client layer (status, headers, body shape)', () => {
    const { attempt } = setup();
    for (let i = 0; i < 10; i++) attempt('203.0.113.9', 'zed', 'x');
    expectRateLimited(attempt('203.0.113.9', 'zed', 'x'), 300_000, 'client');
  });

  it('missing credentials count nowhere; attempts without an account skip the account layers', () => {
    const { attempt, gate } = setup({ maxAttempts: 1000 });
    for (let i = 0; i < 50; i++)
      expect(status(attempt('203.0.113.10', 'alice', undefined))).toBe(401);
    for (let i = 0; i < 50; i++) expect(status(attempt('203.0.113.10', undefined, 'x'))).toBe(401);
    expect(status(attempt('203.0.113.10', 'alice', 'right'))).toBe(200);
    expect(gate.layers.map((l) => l.config.name)).toEqual([
      'auth.pair',
      'auth.account',
      'auth.spray',
    ]);
  });

  it('accounts: huge, empty, non-string and malformed ones share account:invalid; case and Unicode forms stay apart', () => {
    const { attempt, events } = setup({
      maxAttempts: 1000,
      accountLimits: { account: { maxAttempts: 4 }, spray: false, pair: false },
    });
    for (const user of ['x'.repeat(257), '', 42, '\uD800'])
      expect(status(attempt(`10.4.0.${events.length}`, user, 'x'))).toBe(401);
    expect(events.map((e) => [e.layer, e.key, e.account])).toEqual([
      ['account', 'account:invalid', 'invalid'],
    ]);
    // 'é' precomposed and decomposed, and 'Bob' / 'bob', are four accounts unless `account` normalises.
    for (const user of ['\u00e9', 'e\u0301', 'Bob', 'bob'])
      for (let i = 0; i < 3; i++) attempt(`10.5.0.${i}`, user, 'x');
    expect(events).toHaveLength(1);
    const normalising = setup({
      maxAttempts: 1000,
      account: (r) => String(r.user).normalize('NFKC').toLowerCase(),
      accountLimits: { account: { maxAttempts: 4 }, spray: false, pair: false },
    });
    for (const user of ['\u00e9', 'e\u0301', '\u00c9', 'E\u0301'])
      normalising.attempt('10.6.0.1', user, 'x');
    expect(normalising.events.map((e) => [e.layer, e.key])).toEqual([
      ['account', 'account:\u00e9'],
    ]);
  });

  it('onLockout names the account only when the layer key holds it (a long account is a digest)', () => {
    const { attempt, events } = setup({
      maxAttempts: 1000,
      accountLimits: { account: { maxAttempts: 3 }, pair: { maxAttempts: 2 }, spray: false },
    });
    const long = 'a'.repeat(250);
    attempt('203.0.113.60', long, 'x');
    attempt('198.51.100.60', long, 'x');
    attempt('203.0.113.60', long, 'x');
    expect(events.map((e) => [e.layer, e.key.slice(0, 7), 'account' in e]).sort()).toEqual([
      ['account', 'sha256:', false],
      ['pair', 'sha256:', false],
    ]);
  });

  it('escalate: the client layer, the pair and the spray lockouts grow by factor up to maxLockoutMs; a success resets', () => {
    const { attempt, clock, events } = setup({
      maxAttempts: 2,
      lockoutMs: 60_000,
      escalate: { factor: 3, maxLockoutMs: 500_000 },
    });
    const lockouts: number[] = [];
    for (let round = 0; round < 4; round++) {
      attempt('203.0.113.11', 'alice', 'x');
      attempt('203.0.113.11', 'alice', 'x');
      const r = attempt('203.0.113.11', 'alice', 'right');
      lockouts.push(r.decision?.retryAfterMs ?? -1);
      clock.advance(r.decision?.retryAfterMs ?? 0);
    }
    expect(lockouts).toEqual([60_000, 180_000, 500_000, 500_000]);
    expect(events.map((e) => e.lockoutMs)).toEqual([60_000, 180_000, 500_000, 500_000]);
    expect(status(attempt('203.0.113.11', 'alice', 'right'))).toBe(200);
    attempt('203.0.113.11', 'alice', 'x');
    expect(attempt('203.0.113.11', 'alice', 'x').decision?.retryAfterMs).toBe(60_000);
  });

  it("escalate: a success forgets a pair's step even when the pair holds no failures any more", () => {
    const { attempt, clock } = setup({
      maxAttempts: 1000,
      escalate: { factor: 2, maxLockoutMs: 86_400_000 },
      accountLimits: { pair: { maxAttempts: 2, lockoutMs: 60_000 }, spray: false },
    });
    const lockPair = () => {
      attempt('203.0.113.50', 'alice', 'x');
      attempt('203.0.113.50', 'alice', 'x');
      return attempt('203.0.113.50', 'alice', 'x').decision?.retryAfterMs;
    };
    expect(lockPair()).toBe(60_000);
    clock.advance(60_000);
    expect(lockPair()).toBe(120_000);
    clock.advance(120_000);
    // The pair's lockout is over and its log empty; the success must still reset its step.
    expect(status(attempt('203.0.113.50', 'alice', 'right'))).toBe(200);
    expect(lockPair()).toBe(60_000);
  });

  it('onLockout hears bans made on the gate limiter, and a throwing hook is logged, never thrown', async () => {
    const errors: unknown[] = [];
    const { gate, attempt } = setup({
      onLockout: () => {
        throw new Error('hook');
      },
      logger: { warn: () => {}, error: (o) => errors.push((o as { code: string }).code) },
      maxAttempts: 1,
    });
    expect(status(attempt('203.0.113.12', 'alice', 'x'))).toBe(401);
    expect(errors).toEqual(['PORTCULLIS_HOOK_ERROR']);
    const heard: LockoutEvent[] = [];
    const s = setup({ onLockout: (e) => heard.push(e) });
    void s.gate.limiter.ban('203.0.113.13', { scope: 'password', ms: 5000 });
    expect(heard).toEqual([
      { layer: 'ban', scope: 'password', key: '203.0.113.13', lockoutMs: 5000, until: 1_005_000 },
    ]);
    await gate.close();
  });

  it('dry run: the layers count and report but never refuse', () => {
    const { attempt, events } = setup({ dryRun: true, maxAttempts: 1000 });
    for (let i = 0; i < 25; i++) attempt('203.0.113.14', 'alice', 'x');
    expect(events.map((e) => e.layer)).toEqual(['pair']);
    expect(status(attempt('203.0.113.14', 'alice', 'right'))).toBe(200);
  });

  it('lockouts of the layers are listed by their own limiters, with their layer', () => {
    const { attempt, gate } = setup({ maxAttempts: 1000 });
    for (let i = 0; i < 20; i++) attempt('203.0.113.15', 'alice', 'x');
    expect(gate.limiter.lockouts()).toEqual([]);
    const pair = gate.layers[0] as (typeof gate.layers)[number];
    expect(
      (pair.lockouts() as { layer: string; key: string; scope: string }[]).map((l) => [
        l.layer,
        l.scope,
        l.key,
      ]),
    ).toEqual([['pair', 'password', '203.0.113.15\u0000account:alice']]);
  });

  it('a loopback client is never refused by a layer; with loopbackPenalty its failures wait 250, 500, … 5000 ms', async () => {
    const { gate, clock } = setup({ loopbackPenalty: {}, maxAttempts: 1 });
    const local = raw('127.0.0.1');
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      const started = clock.now();
      const pending = gate.run(local, { user: 'alice', password: 'x' });
      expect(pending).toBeInstanceOf(Promise);
      let done = false;
      void (pending as Promise<GateResult>).then(() => {
        done = true;
      });
      while (!done) {
        clock.advance(1);
        await Promise.resolve();
        await Promise.resolve();
      }
      waits.push(clock.now() - started);
      expect(status(await pending)).toBe(401);
    }
    expect(waits).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    // A right credential is answered at once and resets the streak.
    expect(status(gate.run(local, { user: 'alice', password: 'right' }) as GateResult)).toBe(200);
    const next = gate.run(local, { user: 'alice', password: 'x' });
    clock.advance(250);
    expect(status(await next)).toBe(401);
    // close() answers whoever still waits.
    const waiting = gate.run(local, { user: 'alice', password: 'x' });
    const second = gate.run(local, { user: 'alice', password: 'x' });
    await gate.close();
    expect(status(await waiting)).toBe(401);
    expect(status(await second)).toBe(401);
  });

  it("a layers' store full of an attacker's lockouts refuses no one else (a full layer is open; the client layer still limits)", () => {
    const { attempt } = setup({
      maxAttempts: 1000,
      maxEntries: 10,
      accountLimits: { pair: { maxAttempts: 1 }, spray: { maxAccounts: 1 }, account: false },
    });
    // Five bots, one failure each: five pair and five spray lockouts fill the layers' store.
    for (let i = 0; i < 5; i++) expect(status(attempt(`10.7.0.${i}`, `acct${i}`, 'x'))).toBe(401);
    expectRateLimited(attempt('10.7.0.0', 'other', 'right'), 3_600_000, 'spray');
    expect(status(attempt('198.51.100.30', 'alice', 'right'))).toBe(200);
    expect(status(attempt('198.51.100.31', 'bob', 'x'))).toBe(401);
    expect(status(attempt('198.51.100.31', 'bob', 'right'))).toBe(200);
  });

  it('bounded: random accounts and addresses never grow the layers past maxEntries, nor evict an earned lockout', async () => {
    const { attempt, gate } = setup({ maxAttempts: 1000, maxEntries: 500, maxTrusted: 50 });
    // One client earns a pair lockout first.
    for (let i = 0; i < 20; i++) attempt('203.0.113.40', 'alice', 'x');
    for (let i = 0; i < 5000; i++) {
      attempt(`10.9.${(i >> 8) & 255}.${i & 255}`, `rnd-${i}-${'z'.repeat(i % 300)}`, 'x');
      if (i % 10 === 0) attempt(`10.10.${(i >> 8) & 255}.${i & 255}`, `ok-${i}`, 'right');
    }
    const layerStore = (gate.layers[0] as (typeof gate.layers)[number]).store;
    expect(await layerStore.size()).toBeLessThanOrEqual(500);
    expectRateLimited(attempt('203.0.113.40', 'alice', 'right'), 3_600_000, 'pair');
  });

  it('with the layers on, a refused attempt never reaches verify, and account is read before verify', async () => {
    const calls: string[] = [];
    const clock = manualClock(0);
    const gate = createAuthGate<Login>({
      verify: (r) => {
        calls.push('verify');
        return r.password === undefined ? 'missing' : r.password === 'right' ? 'ok' : 'invalid';
      },
      account: async (r) => {
        calls.push('account');
        return r.user as string;
      },
      maxAttempts: 2,
      clock,
      timers: clock,
    });
    const run = (password?: string) =>
      gate.run(raw('203.0.113.30'), { user: 'alice', password }) as Promise<GateResult>;
    expect(status(await run('x'))).toBe(401);
    expect(status(await run('x'))).toBe(401);
    expect(calls).toEqual(['account', 'verify', 'account', 'verify']);
    calls.length = 0;
    expect(status(await run('right'))).toBe(429);
    // A locked-out client's request without credentials is refused unseen as well (429, not 401).
    expect(status(await run(undefined))).toBe(429);
    expect(calls).toEqual(['account', 'account']);
    clock.advance(300_000);
    expect(status(await run(undefined))).toBe(401);
    expect(status(await run('right'))).toBe(200);
  });

  it('options: accountLimits needs account; scopeBudget needs all three numbers; a store without trust is refused', () => {
    const verify = (): AuthOutcome => 'ok';
    const codeOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return e instanceof PortcullisConfigError ? e.code : String(e);
      }
      return 'no error';
    };
    expect(codeOf(() => createAuthGate({ verify, accountLimits: {} }))).toBe(
      'ERR_PORTCULLIS_ACCOUNT_LIMITS',
    );
    expect(
      codeOf(() =>
        createAuthGate({ verify, scopeBudget: { maxAttempts: 5, windowMs: 1000 } as never }),
      ),
    ).toBe('ERR_PORTCULLIS_SCOPE_BUDGET');
    expect(
      codeOf(() =>
        createAuthGate({ verify, accountLimits: { pair: { maxAttempts: 0 } }, account: () => 'a' }),
      ),
    ).toBe('ERR_PORTCULLIS_MAX_ATTEMPTS');
    // What a layer limiter is told is no option: a client limiter that took it would stop reading IPs.
    expect(codeOf(() => createAuthGate({ verify, layer: 'pair' } as never))).toBe(
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
    );
    expect(codeOf(() => createAuthGate({ verify, escalate: { factor: 1.5 } }))).toBe(
      'ERR_PORTCULLIS_FACTOR',
    );
    expect(codeOf(() => createAuthGate({ verify, loopbackPenalty: { baseMs: -1 } }))).toBe(
      'ERR_PORTCULLIS_BASE_MS',
    );
    const m = new MemoryStore();
    const bare: Store = {
      consume: m.consume.bind(m),
      peek: m.peek.bind(m),
      refund: m.refund.bind(m),
      checkFailures: m.checkFailures.bind(m),
      recordFailure: m.recordFailure.bind(m),
      recordSuccess: m.recordSuccess.bind(m),
      delete: m.delete.bind(m),
      size: () => m.size(),
      close: () => m.close(),
    };
    expect(codeOf(() => createAuthGate({ verify, store: bare, account: () => 'a' }))).toBe(
      'ERR_PORTCULLIS_STORE',
    );
    // Nothing configured: the plain gate, no layers, no decision.layer.
    const plain = createAuthGate({ verify });
    expect(plain.layers).toEqual([]);
    expect((plain.decide(raw('203.0.113.20'), 'ok') as GateResult).decision).not.toHaveProperty(
      'layer',
    );
  });
});
