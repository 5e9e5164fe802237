import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import { MemoryStore } from '../memory-store.js';
import type {
  FailureDecision,
  FailureRule,
  Store,
  StoreAnswer,
  StoreCall,
  StoreLockout,
  TrustRule,
} from '../store.js';
import { createAccessList } from '../access/access-list.js';
import { manualClock } from '../testing/manual-clock.js';
import type { GateResult } from './answer.js';
import { type AuthGateOptions, createAuthGate } from './auth-gate.js';

/**
 * A store that records every call made to it (a batch as one call, with the operations in it),
 * over a MemoryStore. Not a MemoryStore itself, so a gate keeps its layers in it as it does in a
 * RedisStore: one store for the client and the layers.
 */
class CountingStore implements Store {
  readonly calls: string[] = [];
  /** What each batched call names: its key, or a trust call's table. */
  readonly names: string[] = [];
  constructor(
    readonly inner: MemoryStore,
    withBatch: boolean,
  ) {
    if (!withBatch) delete this.batch;
  }
  batch?: (calls: readonly StoreCall[]) => StoreAnswer[] = (calls) => {
    this.calls.push(`batch(${calls.map((c) => c.op).join(',')})`);
    for (const c of calls) this.names.push('table' in c ? c.table : c.key);
    return this.inner.batch(calls);
  };
  #log(name: string): void {
    this.calls.push(name);
  }
  consume(): never {
    throw new Error('not a window store');
  }
  peek(): never {
    throw new Error('not a window store');
  }
  refund(): void {}
  checkFailures(key: string, rule: FailureRule): Decision {
    this.#log('checkFailures');
    return this.inner.checkFailures(key, rule);
  }
  recordFailure(key: string, rule: FailureRule): FailureDecision {
    this.#log('recordFailure');
    return this.inner.recordFailure(key, rule);
  }
  recordSuccess(key: string, rule: FailureRule): Decision {
    this.#log('recordSuccess');
    return this.inner.recordSuccess(key, rule);
  }
  recordDistinct(key: string, member: string, rule: FailureRule): FailureDecision {
    this.#log('recordDistinct');
    return this.inner.recordDistinct(key, member, rule);
  }
  trust(table: string, group: string, member: string, rule: TrustRule): void {
    this.#log('trust');
    this.inner.trust(table, group, member, rule);
  }
  trusted(table: string, member: string, groups: readonly string[], rule: TrustRule): boolean[] {
    this.#log('trusted');
    return this.inner.trusted(table, member, groups, rule);
  }
  lockouts(prefix: string, limit: number, rule: FailureRule): StoreLockout[] {
    return this.inner.lockouts(prefix, limit, rule);
  }
  delete(key: string): void {
    this.inner.delete(key);
  }
  size(): number {
    return this.inner.size();
  }
  close(): void {
    this.inner.close();
  }
}

const raw = (ip: string): RawRequest => ({ socket: { remoteAddress: ip }, headers: {} });

interface Login {
  user: string;
  password: string;
}

function setup(extra: Partial<AuthGateOptions<Login>>, withBatch = true) {
  const clock = manualClock(1_000_000);
  const store = new CountingStore(new MemoryStore({ clock, timers: clock }), withBatch);
  const gate = createAuthGate<Login>({
    verify: (r) => (r.password === 'right' ? 'ok' : 'invalid'),
    scope: 'password',
    store,
    ...extra,
  });
  const attempt = (ip: string, user: string, password: string) => {
    store.calls.length = 0;
    const r = gate.run(raw(ip), { user, password }) as GateResult;
    return { status: r.ok ? 200 : r.answer.status, calls: [...store.calls] };
  };
  return { attempt, clock };
}

const layered = {
  account: (r: Login) => r.user,
  scopeBudget: { maxAttempts: 3, windowMs: 60_000, lockoutMs: 60_000 },
};

const CHECK = 'batch(checkFailures,checkFailures,checkFailures,checkFailures,checkFailures)';

describe('the cost of the layers in store operations (docs/design.md#defence-in-depth)', () => {
  it('the plain gate: one call to check, one to count', () => {
    const { attempt } = setup({});
    expect(attempt('203.0.113.1', 'alice', 'right')).toEqual({
      status: 200,
      calls: ['checkFailures', 'recordSuccess'],
    });
    expect(attempt('203.0.113.1', 'alice', 'wrong')).toEqual({
      status: 401,
      calls: ['checkFailures', 'recordFailure'],
    });
  });

  it('a success not under attack costs what the plain gate costs: one batch to check, one to count', () => {
    const { attempt } = setup(layered);
    // A new client earns trust for the account and in the scope in the same operation.
    expect(attempt('203.0.113.1', 'alice', 'right')).toEqual({
      status: 200,
      calls: [CHECK, 'batch(recordSuccess,trust,trust)'],
    });
    // After a failure the success also clears the pair, still in that one operation.
    expect(attempt('203.0.113.2', 'bob', 'wrong').status).toBe(401);
    expect(attempt('203.0.113.2', 'bob', 'right')).toEqual({
      status: 200,
      calls: [CHECK, 'batch(recordSuccess,recordSuccess,trust,trust)'],
    });
  });

  it('a failure costs two operations; under attack the check reads trust in one more', () => {
    const { attempt } = setup(layered);
    expect(attempt('203.0.113.1', 'alice', 'right').status).toBe(200);
    expect(attempt('198.51.100.1', 'alice', 'wrong')).toEqual({
      status: 401,
      calls: [
        CHECK,
        'batch(recordFailure,recordFailure,recordDistinct,recordFailure,recordFailure)',
      ],
    });
    expect(attempt('198.51.100.2', 'alice', 'wrong').status).toBe(401);
    expect(attempt('198.51.100.3', 'alice', 'wrong').status).toBe(401);
    // Under attack (the scope's budget is spent): trust is read, in one operation, and only then.
    expect(attempt('198.51.100.4', 'alice', 'right')).toEqual({
      status: 429,
      calls: [CHECK, 'batch(trusted,trusted)'],
    });
    expect(attempt('203.0.113.1', 'alice', 'right')).toEqual({
      status: 200,
      calls: [CHECK, 'batch(trusted,trusted)', 'batch(recordSuccess,trust,trust)'],
    });
  });

  it('a store without batch() gets the same calls one by one, with the same answers', () => {
    const { attempt } = setup(layered, false);
    expect(attempt('203.0.113.1', 'alice', 'right')).toEqual({
      status: 200,
      calls: [
        'checkFailures',
        'checkFailures',
        'checkFailures',
        'checkFailures',
        'checkFailures',
        'recordSuccess',
        'trust',
        'trust',
      ],
    });
    for (const ip of ['198.51.100.1', '198.51.100.2', '198.51.100.3'])
      expect(attempt(ip, 'alice', 'wrong').status).toBe(401);
    expect(attempt('198.51.100.4', 'alice', 'right').status).toBe(429);
    expect(attempt('203.0.113.1', 'alice', 'right').status).toBe(200);
  });

  it('an attempt behind access rules resolves its client once, allowed or denied', async () => {
    const clock = manualClock(1_000_000);
    const access = createAccessList({ clock, timers: clock });
    await access.deny('198.51.100.0/24', { reason: 'abuse' });
    // A socket that counts how often its address is read: once per resolution of the client.
    let reads = 0;
    const counted = (ip: string): RawRequest => ({
      socket: {
        get remoteAddress() {
          reads++;
          return ip;
        },
      },
      headers: {},
    });
    for (const extra of [{}, layered]) {
      const gate = createAuthGate<Login>({
        verify: (r) => (r.password === 'right' ? 'ok' : 'invalid'),
        clock,
        timers: clock,
        access,
        ...extra,
      });
      const login = { user: 'alice', password: 'right' };
      for (const [ip, status] of [
        ['203.0.113.1', 200],
        ['198.51.100.7', 403],
      ] as const) {
        reads = 0;
        const r = (await gate.run(counted(ip), login)) as GateResult;
        expect([r.ok ? 200 : r.answer.status, reads]).toEqual([status, 1]);
        reads = 0;
        const d = (await gate.decide(counted(ip), 'invalid', undefined, 'alice')) as GateResult;
        expect([d.ok ? 200 : d.answer.status, reads]).toEqual([status === 200 ? 401 : 403, 1]);
      }
      await gate.close();
    }
  });

  it('on the memory store a layered phase reads the clock once, for the client and the layers', () => {
    const clock = manualClock(1_000_000);
    let reads = 0;
    const counting = {
      now() {
        reads++;
        return clock.now();
      },
    };
    for (const extra of [{}, layered]) {
      const gate = createAuthGate<Login>({
        verify: (r) => (r.password === 'right' ? 'ok' : 'invalid'),
        clock: counting,
        timers: clock,
        ...extra,
      });
      const counted = (password: string) => {
        reads = 0;
        const r = gate.run(raw('203.0.113.1'), { user: 'alice', password }) as GateResult;
        return [r.ok ? 200 : r.answer.status, reads];
      };
      // The check, then the count: one read each, with the layers as without them.
      expect(counted('wrong')).toEqual([401, 2]);
      expect(counted('right')).toEqual([200, 2]);
      void gate.close();
    }
  });

  it('a clock that stepped back between two layered phases changes no answer', () => {
    const clock = manualClock(1_000_000);
    const gate = createAuthGate<Login>({
      verify: (r) => (r.password === 'right' ? 'ok' : 'invalid'),
      clock,
      timers: clock,
      maxAttempts: 2,
      lockoutMs: 60_000,
      ...layered,
    });
    const status = (password: string) => {
      const r = gate.run(raw('203.0.113.1'), { user: 'alice', password }) as GateResult;
      return r.ok ? 200 : r.answer.status;
    };
    expect(status('wrong')).toBe(401);
    clock.set(1_000_000 - 30_000);
    // The second failure counts (the first, stamped ahead of the clock, reads as now) and locks.
    expect(status('wrong')).toBe(401);
    // Locked at the stepped-back time for the full lockout: still refused just before it ends.
    clock.set(1_000_000 - 30_000 + 59_999);
    expect(status('right')).toBe(429);
    clock.set(1_000_000 - 30_000 + 60_000);
    expect(status('right')).toBe(200);
    void gate.close();
  });
  it('a per-call scope is normalized once for the layers and the trust tables: blank is default, a huge one its digest', () => {
    const clock = manualClock(1_000_000);
    const store = new CountingStore(new MemoryStore({ clock, timers: clock }), true);
    const gate = createAuthGate<Login>({
      verify: () => 'ok',
      scope: 'password',
      store,
      account: (r) => r.user,
      accountLimits: { account: { maxAttempts: 3 } },
    });
    const decide = (ip: string, outcome: 'ok' | 'invalid', scope: string) =>
      gate.decide(raw(ip), outcome, scope, 'alice') as GateResult;
    expect(decide('192.0.2.1', 'ok', '  ').ok).toBe(true);
    expect(store.names).toEqual([
      'auth:default:192.0.2.1',
      'auth.pair:default:192.0.2.1\u0000account:alice',
      'auth.spray:default:192.0.2.1',
      'auth.account:default:account:alice',
      'auth:default:192.0.2.1',
      'auth.scope-trust:default',
      'auth.trust:default',
    ]);
    // The trust earned under the blank scope is the default scope's: with alice under attack
    // there, the client that logged in passes and a stranger does not.
    for (let i = 0; i < 3; i++) expect(decide(`10.0.0.${i}`, 'invalid', 'default').ok).toBe(false);
    expect(decide('10.9.9.9', 'ok', 'default').ok).toBe(false);
    expect(decide('192.0.2.1', 'ok', 'default').ok).toBe(true);
    expect(decide('192.0.2.1', 'ok', '').ok).toBe(true);
    // A huge scope names its keys and its trust tables by one digest, never by its own text.
    store.names.length = 0;
    const huge = 'x'.repeat(100_000);
    const digest = `sha256:${createHash('sha256').update(huge).digest('hex')}`;
    expect(decide('192.0.2.1', 'ok', huge).ok).toBe(true);
    expect(store.names).toEqual([
      `auth:${digest}:192.0.2.1`,
      `auth.pair:${digest}:192.0.2.1\u0000account:alice`,
      `auth.spray:${digest}:192.0.2.1`,
      `auth.account:${digest}:account:alice`,
      `auth:${digest}:192.0.2.1`,
      `auth.scope-trust:${digest}`,
      `auth.trust:${digest}`,
    ]);
    void gate.close();
  });
});
