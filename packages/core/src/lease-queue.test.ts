// The concurrency limiter's queue: who waits, for how long, in which order, and that a waiter that
// leaves (timed out, aborted) takes nothing with it and leaves nothing behind.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createConcurrencyLimiter, type Lease } from './concurrency-limiter.js';
import { MemoryStore } from './memory-store.js';
import type { LeaseAnswer, LeaseRule, Store } from './store.js';
import { manualClock } from './testing/manual-clock.js';

const sync = (x: unknown) => x as Lease;

/** Lets every settled promise run its callbacks. */
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** A settled-or-not view of a promise, to assert that a waiter still waits. */
function watch<T>(p: Promise<T> | T) {
  const seen: { value?: T } = {};
  void Promise.resolve(p).then((v) => {
    seen.value = v;
  });
  return seen;
}

function setup(extra: { queue?: number; queueTimeoutMs?: number; dryRun?: boolean } = {}) {
  const clock = manualClock(1_000_000);
  const store = new MemoryStore({ clock, timers: clock });
  const l = createConcurrencyLimiter({ max: 1, store, clock, timers: clock, queue: 2, ...extra });
  return { clock, store, l };
}

describe('createConcurrencyLimiter with a queue', () => {
  it('a refused request waits, and takes the slot the moment it is given back', async () => {
    const { l, clock } = setup();
    const first = sync(l.acquire('k'));
    const second = l.acquire('k');
    expect(second).toBeInstanceOf(Promise);
    const seen = watch(second);
    await flush();
    expect(seen.value).toBeUndefined();
    first.release();
    await flush();
    expect(seen.value?.decision).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 1,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 0,
      key: 'k',
    });
    seen.value?.release();
    // Nothing waits any more: no poll, no timeout, no heartbeat left.
    expect(clock.pendingTimers()).toBe(0);
  });

  it('lets waiters in in order of arrival; one more than `queue` is refused at once', async () => {
    const { l } = setup({ queue: 2 });
    const holder = sync(l.acquire('k'));
    const order: string[] = [];
    const inLine = (name: string) =>
      Promise.resolve(l.acquire('k')).then((lease) => {
        order.push(name);
        return lease;
      });
    const a = inLine('a');
    const b = inLine('b');
    const c = await l.acquire('k');
    expect(c.decision).toMatchObject({ allowed: false, reason: 'limited', retryAfterMs: 1000 });
    holder.release();
    const first = await a;
    expect(first.decision.allowed).toBe(true);
    first.release();
    const second = await b;
    expect(second.decision.allowed).toBe(true);
    expect(order).toEqual(['a', 'b']);
    second.release();
  });

  it('a waiter is refused exactly queueTimeoutMs after it arrived, holding nothing', async () => {
    const { l, clock } = setup({ queueTimeoutMs: 5000 });
    const holder = sync(l.acquire('k'));
    const seen = watch(l.acquire('k'));
    clock.advance(4999);
    await flush();
    expect(seen.value).toBeUndefined();
    clock.advance(1);
    await flush();
    expect(seen.value?.decision).toMatchObject({ allowed: false, reason: 'limited', remaining: 0 });
    seen.value?.release();
    holder.release();
    // The refused waiter took nothing: the next request gets the slot at once.
    expect(sync(l.acquire('k')).decision.allowed).toBe(true);
  });

  it('a waiter whose signal aborts leaves the line at once, and its place goes to the next', async () => {
    const { l } = setup({ queue: 1 });
    const holder = sync(l.acquire('k'));
    const left = new AbortController();
    const gone = l.acquire('k', left.signal);
    left.abort();
    expect((await gone).decision.allowed).toBe(false);
    // Its place is free again: a new waiter queues (and is not refused at once).
    const next = watch(l.acquire('k'));
    await flush();
    expect(next.value).toBeUndefined();
    holder.release();
    await flush();
    expect(next.value?.decision.allowed).toBe(true);
    // A signal aborted before the call never queues.
    const before = AbortSignal.abort();
    expect((await l.acquire('k', before)).decision.allowed).toBe(false);
  });

  it('a newcomer joins the line behind waiters; a slot freed by another process is found by the poll', async () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    // Two limiters on one store: two processes sharing a RedisStore, as far as each can tell.
    const options = { max: 1, store, clock, timers: clock, queue: 5, queuePollMs: 100 };
    const here = createConcurrencyLimiter(options);
    const there = createConcurrencyLimiter(options);
    const theirs = sync(there.acquire('k'));
    const waiter = watch(here.acquire('k'));
    theirs.release(); // this process is not told
    const newcomer = watch(here.acquire('k'));
    await flush();
    expect([waiter.value, newcomer.value]).toEqual([undefined, undefined]);
    clock.advance(100);
    await flush();
    expect(waiter.value?.decision.allowed).toBe(true);
    expect(newcomer.value).toBeUndefined();
    waiter.value?.release();
    await flush();
    expect(newcomer.value?.decision.allowed).toBe(true);
    newcomer.value?.release();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a slot the store grants a waiter that timed out meanwhile is given back', async () => {
    const clock = manualClock(0);
    const inner = new MemoryStore({ clock, timers: clock });
    const answers: (() => void)[] = [];
    // A store whose acquire answers only when the test says so.
    const store: Store = Object.assign(Object.create(inner) as Store, {
      acquire: (key: string, rule: LeaseRule, lease: string) =>
        new Promise<LeaseAnswer>((resolve) => {
          answers.push(() => resolve(inner.acquire(key, rule, lease)));
        }),
      release: (key: string, lease: string) => Promise.resolve(inner.release(key, lease)),
    });
    const l = createConcurrencyLimiter({
      max: 1,
      store,
      clock,
      timers: clock,
      queue: 1,
      queueTimeoutMs: 1000,
      queuePollMs: 100,
    });
    const holding = l.acquire('k');
    answers.shift()?.();
    const holder = await holding;
    const waiter = watch(l.acquire('k'));
    answers.shift()?.(); // refused: it queues
    await flush();
    holder.release();
    await flush();
    clock.advance(100); // the poll asks; the store has not answered yet
    clock.advance(900); // the waiter times out
    await flush();
    expect(waiter.value?.decision.allowed).toBe(false);
    answers.shift()?.(); // now the store grants the slot to the waiter that left
    await flush();
    // It was given back: a newcomer takes it.
    const next = l.acquire('k');
    answers.shift()?.();
    expect((await next).decision.allowed).toBe(true);
  });

  it('a dry run never queues; a closed store refuses at once', async () => {
    const { l } = setup({ dryRun: true });
    const a = sync(l.acquire('k'));
    const b = l.acquire('k');
    expect(b).not.toBeInstanceOf(Promise);
    expect(sync(b).decision).toMatchObject({ allowed: true, dryRun: true });
    a.release();
    expect(l.queues).toBe(false);

    const inner = new MemoryStore();
    const failing: Store = Object.assign(Object.create(inner) as Store, {
      acquire: () => ({ acquired: false, held: 0, reason: 'store-error' }) as LeaseAnswer,
      release: () => undefined,
    });
    const closed = createConcurrencyLimiter({ max: 1, store: failing, queue: 5 });
    expect(sync(closed.acquire('k')).decision).toMatchObject({
      allowed: false,
      reason: 'store-error',
    });
  });

  it('refuses bad queue options with a code', () => {
    const bad: [unknown, string][] = [
      [{ max: 1, queue: -1 }, 'ERR_PORTCULLIS_QUEUE'],
      [{ max: 1, queue: 1.5 }, 'ERR_PORTCULLIS_QUEUE'],
      [{ max: 1, queue: 2_000_000 }, 'ERR_PORTCULLIS_QUEUE'],
      [{ max: 1, queueTimeoutMs: 0 }, 'ERR_PORTCULLIS_QUEUE_TIMEOUT_MS'],
      [{ max: 1, queuePollMs: '100' }, 'ERR_PORTCULLIS_QUEUE_POLL_MS'],
    ];
    for (const [options, code] of bad)
      expect(
        () => createConcurrencyLimiter(options as never),
        JSON.stringify(options),
      ).toThrowError(expect.objectContaining({ code }));
  });

  it('never holds more than max nor lets anyone wait past its timeout, whatever the order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(fc.oneof(fc.constant('take' as const), fc.nat(9), fc.constant('tick' as const)), {
          maxLength: 50,
        }),
        async (max, queue, ops) => {
          const clock = manualClock(0);
          const store = new MemoryStore({ clock, timers: clock });
          const l = createConcurrencyLimiter({
            max,
            store,
            clock,
            timers: clock,
            queue,
            queueTimeoutMs: 300,
          });
          const held: Lease[] = [];
          const waiting = new Map<number, number>();
          const waited: number[] = [];
          let n = 0;
          for (const op of ops) {
            if (op === 'take') {
              const id = n++;
              waiting.set(id, clock.now());
              void Promise.resolve(l.acquire('k')).then((lease) => {
                waited.push(clock.now() - (waiting.get(id) as number));
                waiting.delete(id);
                if (lease.decision.allowed) held.push(lease);
              });
            } else if (op === 'tick') {
              // In steps of 10 ms: a settled wait is seen within 10 ms of its end.
              for (let step = 0; step < 10; step++) {
                clock.advance(10);
                await flush();
              }
            } else if (held.length > 0) {
              held.splice(op % held.length, 1)[0]?.release();
            }
            await flush();
            expect(held.length).toBeLessThanOrEqual(max);
          }
          for (let step = 0; step < 30; step++) {
            clock.advance(10);
            await flush();
          }
          expect(waiting.size).toBe(0);
          expect(waited.filter((ms) => ms > 309)).toEqual([]);
          for (const lease of held) lease.release();
          expect(clock.pendingTimers()).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
