/*
 * A botnet against the auth layers (docs/design.md#defence-in-depth): 2 000 addresses behind a
 * trusted proxy guess against one account, and against a shared secret. What reaches `verify` is
 * bounded exactly by the layers' budgets; a client that logged in before the attack logs in on its
 * first try during it; nothing the attacker does (without a trusted client) locks the victim out
 * of theirs; when the lockouts end, everything is as before.
 */
import { manualClock } from '@portcullis/core/testing';
import { type AuthGateOptions, createAuthGate, type GateResult } from '@portcullis/core/adapter';
import { describe, expect, it } from 'vitest';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const PROXY = '127.0.0.1';
const BOTS = Array.from(
  { length: 2000 },
  (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
);

interface Login {
  readonly from: string;
  readonly user?: string;
  readonly password: string;
}

/** The gateway's numbers (10 failures per minute per client, then 5 minutes) plus the layers. */
function gateway(extra: Partial<AuthGateOptions<Login>> = {}) {
  const clock = manualClock(1_700_000_000_000);
  let reachedVerify = 0;
  const gate = createAuthGate<Login>({
    verify: (r) => {
      reachedVerify++;
      return r.password === 'right' ? 'ok' : 'invalid';
    },
    trustedProxies: [PROXY],
    clock,
    timers: clock,
    ...extra,
  });
  const attempt = (r: Login) =>
    gate.run(
      { socket: { remoteAddress: PROXY }, headers: { 'x-forwarded-for': r.from } },
      r,
    ) as GateResult;
  return {
    clock,
    gate,
    attempt,
    verified: () => reachedVerify,
    status: (r: Login) => {
      const out = attempt(r);
      return out.ok ? 200 : out.answer.status;
    },
  };
}

describe('a botnet of 2 000 addresses', () => {
  it('against one account: 100 guesses reach verify, then only trusted clients do; the victim keeps logging in', () => {
    const g = gateway({ scope: 'password', account: (r) => r.user });
    // Alice logged in from her laptop last week.
    expect(g.status({ from: '192.0.2.44', user: 'alice', password: 'right' })).toBe(200);
    g.clock.advance(7 * 24 * HOUR);
    const before = g.verified();
    // Each bot guesses 5 times over the hour (well under every per-client limit).
    const answers = new Map<number, number>();
    for (let round = 0; round < 5; round++) {
      for (const from of BOTS) {
        const s = g.status({ from, user: 'alice', password: `guess-${round}-${from}` });
        answers.set(s, (answers.get(s) ?? 0) + 1);
      }
      // Alice logs in on her first try in the middle of the attack.
      expect(g.status({ from: '192.0.2.44', user: 'alice', password: 'right' })).toBe(200);
      g.clock.advance(10 * MINUTE);
    }
    // 100 guesses (the account layer's budget) reached verify; every other one was refused unseen.
    expect(g.verified() - before - 5).toBe(100);
    expect(Object.fromEntries(answers)).toEqual({ 401: 100, 429: 9900 });
    // A new device of Alice's is refused while the account is under attack (soft lock: SECURITY.md).
    expect(g.status({ from: '198.51.100.9', user: 'alice', password: 'right' })).toBe(429);
    // Other accounts are untouched, from any address.
    expect(g.status({ from: BOTS[0] as string, user: 'bob', password: 'right' })).toBe(200);
    // The lockout started at the 100th failure, in the first round: an hour later it is over and
    // everything is as before (a new client logs in, a guess reaches verify and is a 401).
    g.clock.advance(HOUR);
    expect(g.status({ from: '198.51.100.9', user: 'alice', password: 'right' })).toBe(200);
    const after = g.verified();
    expect(g.status({ from: BOTS[1999] as string, user: 'alice', password: 'nope' })).toBe(401);
    expect(g.verified() - after).toBe(1);
  });

  it('against the shared secret: the scope budget admits exactly its budget, trusted clients still connect', () => {
    const g = gateway({
      scope: 'shared-secret',
      scopeBudget: { maxAttempts: 500, windowMs: 10 * MINUTE, lockoutMs: 15 * MINUTE },
    });
    expect(g.status({ from: '192.0.2.80', password: 'right' })).toBe(200);
    const before = g.verified();
    const answers = new Map<number, number>();
    for (let round = 0; round < 3; round++) {
      for (const from of BOTS) {
        const s = g.status({ from, password: `guess-${round}-${from}` });
        answers.set(s, (answers.get(s) ?? 0) + 1);
      }
      expect(g.status({ from: '192.0.2.80', password: 'right' })).toBe(200);
      g.clock.advance(MINUTE);
    }
    expect(g.verified() - before - 3).toBe(500);
    expect(Object.fromEntries(answers)).toEqual({ 401: 500, 429: 5500 });
    // The lockout (started at the 500th failure, in the first round) ends 15 minutes later.
    g.clock.advance(15 * MINUTE - 3 * MINUTE);
    expect(g.status({ from: '198.51.100.10', password: 'right' })).toBe(200);
    expect(g.status({ from: BOTS[7] as string, password: 'wrong' })).toBe(401);
  });

  it('an attacker without a trusted client cannot lock the victim out of theirs, by any layer', () => {
    const g = gateway({
      scope: 'password',
      account: (r) => r.user,
      scopeBudget: { maxAttempts: 300, windowMs: HOUR, lockoutMs: HOUR },
      escalate: { factor: 2, maxLockoutMs: 24 * HOUR },
    });
    expect(g.status({ from: '192.0.2.44', user: 'alice', password: 'right' })).toBe(200);
    for (let round = 0; round < 30; round++) {
      // Bots hammer alice, spray other accounts, and one address goes for alice alone.
      for (const from of BOTS.slice(0, 200)) {
        g.attempt({ from, user: 'alice', password: 'x' });
        g.attempt({ from, user: `u${round}`, password: 'x' });
      }
      for (let i = 0; i < 30; i++)
        g.attempt({ from: '203.0.113.99', user: 'alice', password: 'x' });
      expect(g.status({ from: '192.0.2.44', user: 'alice', password: 'right' })).toBe(200);
      g.clock.advance(2 * MINUTE);
    }
    // The attacker's own address is refused (its client and pair layers, or the scope it put under attack).
    const locked = g.attempt({ from: '203.0.113.99', user: 'alice', password: 'right' });
    expect(locked.ok ? 200 : locked.answer.status).toBe(429);
  });
});
