import { describe, expect, it } from 'vitest';
import type { RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import { createFailureLimiter, refusedUncounted } from '../failure-limiter.js';
import { MemoryStore } from '../memory-store.js';
import type { FailureDecision, FailureRule, Store, WindowRule } from '../store.js';
import { manualClock } from '../testing/manual-clock.js';
import { createAuthGate } from './auth-gate.js';

/** A memory store answering a macrotask later, so concurrent attempts interleave between calls. */
function laggingStore(): Store {
  const clock = manualClock(0);
  const inner = new MemoryStore({ clock, timers: clock });
  const later = <T>(fn: () => T) => new Promise<T>((resolve) => setImmediate(() => resolve(fn())));
  return {
    consume: (key: string, rule: WindowRule, cost: number) =>
      later(() => inner.consume(key, rule, cost)),
    peek: (key: string, rule: WindowRule) => later(() => inner.peek(key, rule)),
    refund: (key: string, rule: WindowRule, cost: number, agoMs: number) =>
      later(() => inner.refund(key, rule, cost, agoMs)),
    checkFailures: (key: string, rule: FailureRule) => later(() => inner.checkFailures(key, rule)),
    recordFailure: (key: string, rule: FailureRule): Promise<FailureDecision> =>
      later(() => inner.recordFailure(key, rule)),
    recordSuccess: (key, rule) => later(() => inner.recordSuccess(key, rule)),
    delete: (key: string) => later(() => inner.delete(key)),
    size: () => later(() => inner.size()),
    close: () => later(() => inner.close()),
  };
}

const raw: RawRequest = { socket: { remoteAddress: '203.0.113.8' }, headers: {} };

describe('auth gate with an asynchronous store', () => {
  it('answers failures that raced past check into a lockout with 429, not 401', async () => {
    const gate = createAuthGate<object>({
      verify: () => 'invalid',
      limiter: createFailureLimiter({ store: laggingStore() }),
    });
    const results = await Promise.all(Array.from({ length: 30 }, () => gate.run(raw, {})));
    const statuses = results.map((r) => (r.ok ? 200 : r.answer.status));
    expect(statuses.filter((s) => s === 401)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  });
});

describe('refusedUncounted', () => {
  it('is true only for a failure refused because a lockout was already in force', async () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ maxAttempts: 2, clock, timers: clock });
    const first = limiter.recordFailure('192.0.2.1');
    const starter = limiter.recordFailure('192.0.2.1');
    const during = limiter.recordFailure('192.0.2.1');
    expect([first, starter, during].map(refusedUncounted)).toEqual([false, false, true]);
    expect(refusedUncounted(limiter.check('192.0.2.1'))).toBe(false);
    expect(refusedUncounted({ ...during } as Decision)).toBe(false);
  });

  it('is false in dry-run mode, where nothing is refused', () => {
    const clock = manualClock(0);
    const limiter = createFailureLimiter({ maxAttempts: 1, dryRun: true, clock, timers: clock });
    limiter.recordFailure('192.0.2.1');
    expect(refusedUncounted(limiter.recordFailure('192.0.2.1'))).toBe(false);
  });
});
