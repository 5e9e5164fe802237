import type { Decision, FailureDecision, FailureRule, Store, WindowRule } from '@portcullis/core';
import { MemoryStore } from '@portcullis/core';
import type { ManualClock } from '@portcullis/core/testing';

/**
 * A memory store that answers every call a macrotask later, like a store over the network: it
 * drives the adapters' promise path and lets concurrent requests interleave between calls.
 */
export class LaggingStore implements Store {
  readonly #inner: MemoryStore;

  constructor(clock: ManualClock) {
    this.#inner = new MemoryStore({ clock, timers: clock });
  }

  #later<T>(fn: () => T): Promise<T> {
    return new Promise((resolve, reject) =>
      setImmediate(() => {
        try {
          resolve(fn());
        } catch (error) {
          reject(error);
        }
      }),
    );
  }

  consume(key: string, rule: WindowRule, cost: number): Promise<Decision> {
    return this.#later(() => this.#inner.consume(key, rule, cost));
  }

  peek(key: string, rule: WindowRule): Promise<Decision> {
    return this.#later(() => this.#inner.peek(key, rule));
  }

  refund(key: string, rule: WindowRule, cost: number, agoMs: number): Promise<void> {
    return this.#later(() => this.#inner.refund(key, rule, cost, agoMs));
  }

  checkFailures(key: string, rule: FailureRule): Promise<Decision> {
    return this.#later(() => this.#inner.checkFailures(key, rule));
  }

  recordFailure(key: string, rule: FailureRule): Promise<FailureDecision> {
    return this.#later(() => this.#inner.recordFailure(key, rule));
  }

  recordSuccess(key: string, rule: FailureRule): Promise<Decision> {
    return this.#later(() => this.#inner.recordSuccess(key, rule));
  }

  delete(key: string): Promise<void> {
    return this.#later(() => this.#inner.delete(key));
  }

  size(): Promise<number> {
    return this.#later(() => this.#inner.size());
  }

  close(): Promise<void> {
    return this.#later(() => this.#inner.close());
  }
}
