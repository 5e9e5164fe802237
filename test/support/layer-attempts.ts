// Random login attempts for the auth layers' cross-store tests (test/redis, test/redis-cluster):
// one set of small layer numbers, the gate over a store, the answer compared and the sequences.
import type { Store } from '@portcullis/core';
import { type AuthGateOptions, createAuthGate, type GateResult } from '@portcullis/core/adapter';
import type { manualClock } from '@portcullis/core/testing';
import fc from 'fast-check';

/** One attempt: which of four clients, for which of four accounts, with what outcome. */
export interface Attempt {
  readonly client: number;
  readonly account: number;
  readonly outcome: 'ok' | 'invalid' | 'missing';
}

/** Every layer on, with numbers small enough for short sequences to reach each boundary. */
export const LAYER_OPTIONS: Partial<AuthGateOptions<Attempt>> = {
  maxAttempts: 3,
  windowMs: 1000,
  lockoutMs: 2000,
  escalate: { factor: 2, maxLockoutMs: 5000 },
  accountLimits: {
    pair: { maxAttempts: 2, lockoutMs: 1500 },
    account: { maxAttempts: 4, windowMs: 1000, lockoutMs: 3000 },
    spray: { maxAccounts: 2, windowMs: 1000, lockoutMs: 2500 },
  },
  scopeBudget: { maxAttempts: 5, windowMs: 1000, lockoutMs: 2000 },
  trustMs: 3000,
};

/** A gate with {@link LAYER_OPTIONS} over `store`, on `clock`. */
export function layeredGate(
  store: Store,
  clock: ReturnType<typeof manualClock>,
  extra: Partial<AuthGateOptions<Attempt>> = {},
) {
  return createAuthGate<Attempt>({
    ...LAYER_OPTIONS,
    verify: (r) => r.outcome,
    account: (r) => `user${r.account}`,
    store,
    clock,
    timers: clock,
    ...extra,
  });
}

/** What the client sees and the server knows: status, refusing layer (or reason), wait. */
export function answerOf(r: GateResult): unknown[] {
  return r.ok
    ? [200]
    : [
        r.answer.status,
        r.reason === 'rate_limited' ? r.decision?.layer : r.reason,
        r.decision?.retryAfterMs ?? 0,
      ];
}

/** The request of client `i`. */
export const rawOf = (client: number) => ({
  socket: { remoteAddress: `203.0.113.${client + 1}` },
  headers: {},
});

/** Attempts, and clock steps (numbers) between them. */
export const attemptSequences = fc.array(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
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
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 1500 }) },
  ),
  { minLength: 30, maxLength: 80 },
);
