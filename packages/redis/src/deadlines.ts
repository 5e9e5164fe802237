import type { Timers } from '@portcullis/core';
import { keepShape } from '@portcullis/core/adapter';

/**
 * The default timers of the per-call deadline: ref'ed, so a pending call keeps the process alive
 * until `onError` answers (the timer exists only while a call is pending).
 */
export const callTimers: Timers = Object.freeze({
  setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clearTimeout: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/** A call waiting for its reply under the shared deadline timer (see {@link Deadlines}). */
export class Pending {
  /** When it times out, in `performance.now()` time. */
  readonly at: number;
  readonly expire: () => void;
  prev: Pending | undefined = undefined;
  next: Pending | undefined = undefined;
  constructor(at: number, expire: () => void) {
    this.at = at;
    this.expire = expire;
  }
}

// A pending call lives until its reply only: see keepShape.
keepShape(new Pending(0, () => undefined));

/**
 * The deadlines of the calls in flight under the system timers, all `ms` long: one list in the
 * order they were made (so in the order they end) and one timer, armed for the earliest. A timer
 * of its own per call (setTimeout, then clearTimeout on the reply) cost about 0.27 µs of an
 * allowed decision's ~11 µs (bench/redis/insn-fake.mjs). Each call still times out when its own
 * `ms` has passed on the monotonic clock (a timer that fires before that is armed again for the
 * rest), never later than its own timer would have. The timer is ref'ed exactly while a call is
 * pending, as a per-call timer was: a pending call keeps the process alive until `onError`
 * answers, an idle store does not.
 */
export class Deadlines {
  readonly #ms: number;
  #first: Pending | undefined;
  #last: Pending | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #refed = false;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** Registers a call made now: `expire` runs once its `ms` have passed, unless removed first. */
  add(expire: () => void): Pending {
    const p = new Pending(performance.now() + this.#ms, expire);
    const last = this.#last;
    if (last === undefined) this.#first = p;
    else {
      last.next = p;
      p.prev = last;
    }
    this.#last = p;
    if (this.#timer === undefined) {
      this.#timer = setTimeout(this.#fire, this.#ms);
      this.#refed = true;
    } else if (!this.#refed) {
      this.#timer.ref();
      this.#refed = true;
    }
    return p;
  }

  /** The call settled (or expired): its deadline goes. */
  remove(p: Pending): void {
    const { prev, next } = p;
    if (prev === undefined) this.#first = next;
    else prev.next = next;
    if (next === undefined) this.#last = prev;
    else next.prev = prev;
    p.prev = undefined;
    p.next = undefined;
    if (this.#first === undefined && this.#refed) {
      // Nothing pending: the armed timer stays (the next call reuses it) but keeps no process up.
      (this.#timer as ReturnType<typeof setTimeout>).unref();
      this.#refed = false;
    }
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#refed = false;
    const now = performance.now();
    for (let p = this.#first; p !== undefined && p.at <= now; p = this.#first) {
      this.remove(p);
      p.expire();
    }
    const first = this.#first;
    if (first !== undefined) {
      this.#timer = setTimeout(this.#fire, Math.max(1, Math.ceil(first.at - now)));
      this.#refed = true;
    }
  };
}
