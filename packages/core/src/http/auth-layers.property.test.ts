/*
 * The auth layers against a reference model: random attempts (clients × accounts × outcomes) and
 * clock steps drive a gate over the memory store, and every answer (status, refusing layer,
 * retryAfterMs) is checked against a model kept as plain per-layer logs, written apart from the
 * store's algorithms: a log of failure times per key, the distinct accounts per client as a map,
 * trust as a map of earned times.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import { manualClock } from '../testing/manual-clock.js';
import type { GateResult } from './answer.js';
import { createAuthGate } from './auth-gate.js';

const CLIENT = { maxAttempts: 3, windowMs: 1000, lockoutMs: 2000 };
const PAIR = { maxAttempts: 2, lockoutMs: 1500 };
const ACCOUNT = { maxAttempts: 4, windowMs: 1000, lockoutMs: 3000 };
const SPRAY = { maxAccounts: 2, windowMs: 1000, lockoutMs: 2500 };
const SCOPE = { maxAttempts: 5, windowMs: 1000, lockoutMs: 2000 };
const ESCALATE = { factor: 2, maxLockoutMs: 5000 };
const TRUST_MS = 3000;

type Op =
  | { t: 'attempt'; client: number; account: number; outcome: 'ok' | 'invalid' | 'missing' }
  | { t: 'advance'; ms: number }
  /** Advance to a boundary the model knows of (± delta): a trust's end, a lockout's end, an escalation's end. */
  | { t: 'aim'; which: 'trust' | 'lockout' | 'escalation'; client: number; delta: number };

interface Log {
  times: number[];
  /** Accounts of a distinct log, beside `times`. */
  members: string[];
  lockedUntil: number;
  step: number;
  lastEnd: number;
}

/** One layer of the model: a failure log with a lockout, optionally escalating and distinct. */
class ModelLayer {
  readonly #logs = new Map<string, Log>();
  constructor(
    readonly max: number,
    readonly windowMs: number,
    readonly lockoutMs: number,
    readonly escalates: boolean,
  ) {}

  #roll(key: string, now: number): Log {
    let log = this.#logs.get(key);
    if (log === undefined) {
      log = { times: [], members: [], lockedUntil: 0, step: 0, lastEnd: 0 };
      this.#logs.set(key, log);
    }
    if (log.lockedUntil !== 0 && now >= log.lockedUntil) {
      log.lastEnd = log.lockedUntil;
      log.lockedUntil = 0;
      log.times = [];
      log.members = [];
    }
    const keep = log.times.map((t) => t + this.windowMs > now);
    log.members = log.members.filter((_, i) => keep[i]);
    log.times = log.times.filter((_, i) => keep[i]);
    return log;
  }

  /** The instants that matter for `key`: its lockout's end, its escalation's end. */
  edges(key: string): { lockout: number; escalation: number } {
    const log = this.#logs.get(key);
    return {
      lockout: log?.lockedUntil ?? 0,
      escalation: log === undefined || log.lastEnd === 0 ? 0 : log.lastEnd + ESCALATE.maxLockoutMs,
    };
  }

  /** The wait of a lockout in force, 0 when none. */
  locked(key: string, now: number): number {
    const log = this.#roll(key, now);
    return log.lockedUntil === 0 ? 0 : log.lockedUntil - now;
  }

  fail(key: string, now: number, member?: string): void {
    const log = this.#roll(key, now);
    if (log.lockedUntil !== 0) return;
    if (member !== undefined) {
      const at = log.members.indexOf(member);
      if (at >= 0) {
        log.members.splice(at, 1);
        log.times.splice(at, 1);
      }
      log.members.push(member);
    }
    log.times.push(now);
    if (log.times.length < this.max) return;
    const again = this.escalates && log.lastEnd > 0 && now < log.lastEnd + ESCALATE.maxLockoutMs;
    log.step = again ? log.step + 1 : 0;
    const length =
      log.step === 0
        ? this.lockoutMs
        : Math.max(
            this.lockoutMs,
            Math.min(this.lockoutMs * ESCALATE.factor ** log.step, ESCALATE.maxLockoutMs),
          );
    log.lockedUntil = now + length;
    log.times = [];
    log.members = [];
  }

  /** A success: the key's history and escalation go, unless it is locked. */
  clear(key: string, now: number): void {
    if (this.locked(key, now) === 0) this.#logs.delete(key);
  }
}

class Model {
  readonly client = new ModelLayer(CLIENT.maxAttempts, CLIENT.windowMs, CLIENT.lockoutMs, true);
  readonly pair = new ModelLayer(PAIR.maxAttempts, PAIR.lockoutMs, PAIR.lockoutMs, true);
  readonly account = new ModelLayer(
    ACCOUNT.maxAttempts,
    ACCOUNT.windowMs,
    ACCOUNT.lockoutMs,
    false,
  );
  readonly spray = new ModelLayer(SPRAY.maxAccounts, SPRAY.windowMs, SPRAY.lockoutMs, true);
  readonly scope = new ModelLayer(SCOPE.maxAttempts, SCOPE.windowMs, SCOPE.lockoutMs, false);
  readonly trust = new Map<string, number>();

  /** A boundary of `client` (the latest, among its layers), 0 when it has none. */
  edge(which: 'trust' | 'lockout' | 'escalation', c: string): number {
    if (which === 'trust') return (this.trust.get(`s|${c}`) ?? -TRUST_MS) + TRUST_MS;
    const all = [this.client.edges(c), this.spray.edges(c)];
    for (let a = 0; a < 4; a++) all.push(this.pair.edges(`${c}|user${a}`));
    return Math.max(...all.map((e) => e[which]));
  }

  #trusted(group: string, client: string, now: number): boolean {
    const at = this.trust.get(`${group}|${client}`);
    return at !== undefined && now - at < TRUST_MS;
  }

  /** [status, layer, retryAfterMs] of one attempt. */
  attempt(c: string, a: string, outcome: 'ok' | 'invalid' | 'missing', now: number) {
    const client = this.client.locked(c, now);
    if (client > 0) return [429, 'client', client] as const;
    const pair = this.pair.locked(`${c}|${a}`, now);
    const spray = this.spray.locked(c, now);
    if (pair > 0 || spray > 0)
      return spray > pair ? ([429, 'spray', spray] as const) : ([429, 'pair', pair] as const);
    const forAccount = this.#trusted(`a:${a}`, c, now);
    const inScope = this.#trusted('s', c, now);
    const account = forAccount ? 0 : this.account.locked(a, now);
    const scope = forAccount || inScope ? 0 : this.scope.locked('*', now);
    if (account > 0 || scope > 0)
      return scope > account
        ? ([429, 'scope', scope] as const)
        : ([429, 'account', account] as const);
    if (outcome === 'missing') return [401, undefined, 0] as const;
    if (outcome === 'ok') {
      this.client.clear(c, now);
      this.pair.clear(`${c}|${a}`, now);
      this.trust.set(`a:${a}|${c}`, now);
      this.trust.set(`s|${c}`, now);
      return [200, undefined, 0] as const;
    }
    this.client.fail(c, now);
    this.pair.fail(`${c}|${a}`, now);
    this.spray.fail(c, now, a);
    this.account.fail(a, now);
    this.scope.fail('*', now);
    return [401, undefined, 0] as const;
  }
}

const ops = fc.array(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('attempt' as const),
        client: fc.integer({ min: 0, max: 3 }),
        account: fc.integer({ min: 0, max: 3 }),
        outcome: fc.constantFrom(
          'ok' as const,
          'invalid' as const,
          'invalid' as const,
          'missing' as const,
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('aim' as const),
        which: fc.constantFrom('trust' as const, 'lockout' as const, 'escalation' as const),
        client: fc.integer({ min: 0, max: 3 }),
        delta: fc.constantFrom(-1, 0, 1),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('advance' as const),
        ms: fc.oneof(
          fc.integer({ min: 0, max: 300 }),
          fc.integer({ min: 0, max: 3000 }),
          fc.constantFrom(1, 999, 1000, 1500, 2000),
        ),
      }),
    },
  ),
  { minLength: 40, maxLength: 160 },
);

describe('auth layers against a reference model', () => {
  it('every answer (status, layer, wait) matches the model under random attempts and clock steps', async () => {
    await fc.assert(
      fc.asyncProperty(ops, async (sequence) => {
        const clock = manualClock(1_000_000);
        const gate = createAuthGate<{ user: string; outcome: 'ok' | 'invalid' | 'missing' }>({
          verify: (r) => r.outcome,
          account: (r) => r.user,
          ...CLIENT,
          escalate: ESCALATE,
          accountLimits: { pair: PAIR, account: ACCOUNT, spray: SPRAY },
          scopeBudget: SCOPE,
          trustMs: TRUST_MS,
          clock,
          timers: clock,
        });
        const model = new Model();
        for (const op of sequence as Op[]) {
          if (op.t === 'advance') {
            clock.advance(op.ms);
            continue;
          }
          if (op.t === 'aim') {
            const at = model.edge(op.which, `203.0.113.${op.client + 1}`) + op.delta;
            if (at > clock.now()) clock.set(at);
            continue;
          }
          const ip = `203.0.113.${op.client + 1}`;
          const user = `user${op.account}`;
          const req: RawRequest = { socket: { remoteAddress: ip }, headers: {} };
          const r = (await gate.run(req, { user, outcome: op.outcome })) as GateResult;
          const got = [
            r.ok ? 200 : r.answer.status,
            r.ok ? undefined : r.reason === 'rate_limited' ? r.decision?.layer : undefined,
            r.ok || r.reason !== 'rate_limited' ? 0 : r.decision?.retryAfterMs,
          ];
          expect(got).toEqual([...model.attempt(ip, user, op.outcome, clock.now())]);
        }
        await gate.close();
      }),
      { numRuns: Number(process.env.LAYER_RUNS ?? 200) },
    );
  });
});
