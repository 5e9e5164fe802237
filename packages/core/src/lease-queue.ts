// The concurrency limiter's opt-in queue (docs/design.md#concurrency): requests refused a slot
// wait in line, per key and in order of arrival, for at most `timeoutMs`. The head of a line asks
// the store again when a slot of its key is given back in this process, and every `pollMs` (a
// slot given back by another process sharing the store is heard of no other way).
import type { TimerHandle, Timers } from './clock.js';
import { isPromise, type MaybePromise } from './promise.js';
import type { LeaseAnswer } from './store.js';

/** How requests wait for a slot. */
export interface QueueRule {
  /** Most requests of one key waiting at once; one more is refused at once. */
  readonly size: number;
  /** How long one waits before it is refused. */
  readonly timeoutMs: number;
  /** How often the head of a line asks the store again. */
  readonly pollMs: number;
}

/** What the queue needs of the store: take a lease, and give back one taken for a waiter gone. */
export interface QueueStore {
  take(k: string, lease: string): MaybePromise<LeaseAnswer>;
  give(k: string, lease: string): void;
}

interface Waiter {
  readonly lease: string;
  /** Settles the wait: with the answer that took the slot, or `undefined` (timed out, gave up). */
  readonly done: (answer: LeaseAnswer | undefined) => void;
}

/** The waiters of one key, and whether its head is asking the store right now. */
interface Line {
  readonly waiters: Waiter[];
  asking: boolean;
  /** A release came while the head was asking: ask again once the answer is in. */
  again: boolean;
  poll: TimerHandle | undefined;
}

/** Requests waiting for a slot, per key. */
export class LeaseQueue {
  readonly #lines = new Map<string, Line>();
  #waiting = 0;

  constructor(
    private readonly rule: QueueRule,
    private readonly timers: Timers,
    private readonly store: QueueStore,
  ) {}

  /** Requests waiting, over every key. */
  get size(): number {
    return this.#waiting;
  }

  /** Whether requests of `k` wait already: a newcomer then joins the line instead of jumping it. */
  waiting(k: string): boolean {
    return this.#lines.has(k);
  }

  /**
   * Waits for a slot of `k` under lease id `lease`: resolves with the answer that took it, or with
   * `undefined` at once when the line is full, after `timeoutMs`, or when `signal` aborts.
   */
  wait(k: string, lease: string, signal?: AbortSignal): Promise<LeaseAnswer | undefined> {
    if (signal?.aborted === true) return Promise.resolve(undefined);
    let line = this.#lines.get(k);
    if (line !== undefined && line.waiters.length >= this.rule.size) {
      return Promise.resolve(undefined);
    }
    if (line === undefined) {
      line = { waiters: [], asking: false, again: false, poll: undefined };
      this.#lines.set(k, line);
    }
    const theLine = line;
    return new Promise((resolve) => {
      const leave = () => this.#leave(k, theLine, waiter);
      const timer = this.timers.setTimeout(leave, this.rule.timeoutMs);
      signal?.addEventListener('abort', leave, { once: true });
      const waiter: Waiter = {
        lease,
        done: (answer) => {
          this.#waiting--;
          this.timers.clearTimeout(timer);
          signal?.removeEventListener('abort', leave);
          resolve(answer);
        },
      };
      theLine.waiters.push(waiter);
      this.#waiting++;
      this.#schedule(theLine, k);
    });
  }

  /** A slot of `k` was given back in this process: the head of its line asks at once. */
  wake(k: string): void {
    const line = this.#lines.get(k);
    if (line !== undefined) this.#ask(k, line);
  }

  #leave(k: string, line: Line, waiter: Waiter): void {
    const at = line.waiters.indexOf(waiter);
    if (at < 0) return;
    line.waiters.splice(at, 1);
    waiter.done(undefined);
    this.#forgetIfEmpty(k, line);
  }

  #ask(k: string, line: Line): void {
    if (line.asking) {
      line.again = true;
      return;
    }
    const head = line.waiters[0];
    if (head === undefined) return;
    line.asking = true;
    let answer: MaybePromise<LeaseAnswer>;
    try {
      answer = this.store.take(k, head.lease);
    } catch {
      answer = { acquired: false, held: 0 };
    }
    if (isPromise(answer)) {
      answer.then(
        (a) => this.#answered(k, line, head, a),
        () => this.#answered(k, line, head, { acquired: false, held: 0 }),
      );
    } else {
      this.#answered(k, line, head, answer);
    }
  }

  #answered(k: string, line: Line, head: Waiter, answer: LeaseAnswer): void {
    line.asking = false;
    const again = line.again;
    line.again = false;
    if (answer.acquired) {
      if (line.waiters[0] === head) {
        line.waiters.shift();
        head.done(answer);
      } else {
        // The head timed out or left while the store answered: the slot it got is not wanted.
        this.store.give(k, head.lease);
      }
      // Another slot may be free too: the next in line asks at once.
      if (line.waiters.length > 0) this.#ask(k, line);
    } else if (again) {
      this.#ask(k, line);
    }
    if (!this.#forgetIfEmpty(k, line)) this.#schedule(line, k);
  }

  #schedule(line: Line, k: string): void {
    if (line.poll !== undefined) return;
    line.poll = this.timers.setTimeout(() => {
      line.poll = undefined;
      // The answer schedules the next poll (or forgets the line).
      if (line.waiters.length > 0) this.#ask(k, line);
    }, this.rule.pollMs);
  }

  /** Drops an empty line and its poll; true when it was empty. */
  #forgetIfEmpty(k: string, line: Line): boolean {
    if (line.waiters.length > 0) return false;
    if (line.poll !== undefined) this.timers.clearTimeout(line.poll);
    line.poll = undefined;
    if (this.#lines.get(k) === line) this.#lines.delete(k);
    return true;
  }
}
