import type { MaybePromise } from './clock.js';
import type { Decision } from './decision.js';

/** The window algorithms. */
export type Algorithm = 'fixed-window' | 'sliding-window' | 'token-bucket';

/** What a window limiter asks of a store; every number a store needs travels with the call. */
export interface WindowRule {
  readonly algorithm: Algorithm;
  /** Units per window (or bucket capacity). */
  readonly limit: number;
  /** Window length (or time to refill a full bucket). */
  readonly windowMs: number;
}

/** What a failure limiter asks of a store. */
export interface FailureRule {
  readonly maxAttempts: number;
  readonly windowMs: number;
  readonly lockoutMs: number;
}

/** A failure decision from a store, flagged when this very call started the lockout. */
export interface FailureDecision extends Decision {
  readonly lockoutStarted?: true;
}

/**
 * Where limiter state lives. The transitions are defined once in `@portcullis/core`'s algorithms;
 * every store (memory, Redis) must produce identical decisions, which `describeStoreConformance`
 * proves. A store owns time: the memory store reads its clock, the Redis store the server's `TIME`.
 */
export interface Store {
  /** Spends `cost` units of `key` under `rule`; a refused call spends nothing. */
  consume(key: string, rule: WindowRule, cost: number): MaybePromise<Decision>;
  /** What `consume(key, rule, 1)` would answer, without changing anything. */
  peek(key: string, rule: WindowRule): MaybePromise<Decision>;
  /** The failure state of `key` (locked or not); counts nothing. */
  checkFailures(key: string, rule: FailureRule): MaybePromise<Decision>;
  /** Counts one failure for `key`; starts the lockout when it reaches `maxAttempts`. */
  recordFailure(key: string, rule: FailureRule): MaybePromise<FailureDecision>;
  /** Forgets `key` entirely (window, bucket, failure history and lockout). */
  delete(key: string): MaybePromise<void>;
  /** Number of keys held (approximate for shared stores). */
  size(): MaybePromise<number>;
  /** Releases timers and connections. The store must not be used afterwards. */
  close(): MaybePromise<void>;
}
