// The failover scenario shared by the Redis Cluster and Sentinel tests: worker processes with
// different `onError` policies send steady traffic (window consumes and lockout checks) while the
// primary that serves the keys fails and its replica takes over. It measures every decision and
// asserts:
// - no decision waits longer than timeoutMs (+ a scheduling margin);
// - decisions made while the primary is gone follow each process's `onError`; none before;
// - once the replica is promoted every process decides through Redis again;
// - no lockout a process has seen is lost, not even one the promoted replica never received;
// - what is allowed beyond the limit: for counts the replica had, only what `onError` allows
//   (the fallback's own count, at most the limit per process; everything under 'open'); for writes
//   the dead primary had acknowledged but not replicated, exactly those writes.
//
// To make asynchronous replication's loss visible and exact (on loopback a replica is normally
// less than a millisecond behind), a crash is staged as the worst case: the replica is cut off
// (SIGSTOP, then `CLIENT KILL TYPE replica` on the primary), some writes go to the primary alone,
// then the primary is SIGKILLed and the replica resumed: it is promoted without those writes.
import { createFailureLimiter, createWindowLimiter } from '@portcullis/core';
import { expect } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import { decodeState, uniquePrefix } from '../redis/helpers.js';
import {
  type Call,
  failureKey,
  pickKeys,
  REASONS,
  type StoreClient,
  startWorkers,
  subject,
  type TrafficEvent,
  until,
  type Worker,
  type WorkerConfig,
  windowKey,
} from './harness.js';

export const TIMEOUT_MS = 500;
export const PROBE_MS = 100;
/** Scheduling margin on top of timeoutMs: CI machines run several test files' processes at once. */
export const MARGIN_MS = 250;
const FAILURE = { maxAttempts: 5, windowMs: 60_000, lockoutMs: 300_000 };
const LIMIT = 20;
const WINDOWS: WorkerConfig['windows'] = {
  fixed: { algorithm: 'fixed-window', limit: LIMIT, windowMs: 60_000 },
  counter: { algorithm: 'fixed-window', limit: 1_000_000_000, windowMs: 60_000 },
};
/** Writes that go to the cut-off primary alone, per key. */
const LOST_CONSUMES = 10;

export interface Deployment {
  readonly label: string;
  /** The `connect` part of a worker's configuration. */
  connect(kind: 'ioredis' | 'node-redis'): WorkerConfig['connect'];
  /** Whether the primary that fails serves `slot`. */
  victim(slot: number): boolean;
  /** Whether a primary that stays serves `slot` (Sentinel: none). */
  other?(slot: number): boolean;
  /** Resolves once the replica has every write the primary has. */
  replicated(): Promise<void>;
  /** Cuts the replica off: SIGSTOP it, and `CLIENT KILL TYPE replica` on the primary. */
  isolateReplica(): Promise<void>;
  /** The failover itself: SIGKILL the primary (and resume the replica), or a planned switch. */
  fail(): Promise<void>;
  /** Resolves once the replica serves as the primary. */
  promoted(): Promise<void>;
  /** Resolves once every node agrees on the new topology (Cluster: the same slot map). */
  settled?(): Promise<void>;
  /** A client that follows the deployment, for the checks after the failover. */
  client(): Promise<StoreClient>;
}

export interface WorkerSpec {
  label: string;
  kind: 'ioredis' | 'node-redis';
  onError: 'fallback' | 'open' | 'closed';
}

export interface WorkerFigures {
  label: string;
  onError: string;
  decisions: number;
  degraded: number;
  longestWaitMs: number;
  /** From the failure to the end of the last decision `onError` made. */
  degradedForMs: number;
  /** Decisions allowed beyond the limit on the saturated keys, all by `onError`. */
  allowedBeyondLimit: number;
  allowedBeyondLimitPerKeyMax: number;
}

export interface FailoverFigures {
  deployment: string;
  scenario: 'crash' | 'planned';
  timeoutMs: number;
  promotedAfterMs: number;
  settledAfterMs: number;
  longestWaitMs: number;
  workers: WorkerFigures[];
  /** Writes the dead primary acknowledged and the replica never had (crash only). */
  lost?: {
    consumesPerKey: number;
    extraAllowedPerKey: number[];
    lockouts: number;
    refusedByEveryProcessThatSawThem: boolean;
    failuresAllowedByAFreshProcess: number;
  };
  /** Planned switch: per counter key, Redis' count and the units Redis granted. */
  counters?: { count: number; granted: number; degraded: number }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DEGRADED = new Set([REASONS.indexOf('fallback'), REASONS.indexOf('store-error')]);
const isDegraded = (e: TrafficEvent) => DEGRADED.has(e[4]);
const reason = (e: TrafficEvent) => REASONS[e[4]];

/** Runs the scenario against `d`; asserts as it goes and resolves to the figures. */
export async function failoverScenario(
  d: Deployment,
  crash: boolean,
  specs: WorkerSpec[],
): Promise<FailoverFigures> {
  const prefix = uniquePrefix(`${d.label}-${crash ? 'crash' : 'planned'}`);
  const victim = d.victim;
  const onVictim = (limiter: string) => (name: string) => windowKey(prefix, limiter, name);
  // Keys on the primary that fails: saturated windows, lockouts seen before, and (crash) windows
  // and lockouts written while the replica is cut off; counters (planned) for exact counts.
  const saturated = pickKeys(6, (i) => `w-${i}`, onVictim('fixed'), victim);
  const others = d.other ? pickKeys(3, (i) => `x-${i}`, onVictim('fixed'), d.other) : [];
  const locked = pickKeys(4, subject, (s) => failureKey(prefix, s), victim);
  const lostLocked = crash
    ? pickKeys(
        4,
        (i) => subject(i + 100),
        (s) => failureKey(prefix, s),
        victim,
      )
    : [];
  const lostWindows = crash ? pickKeys(3, (i) => `l-${i}`, onVictim('fixed'), victim) : [];
  const counters = crash ? [] : pickKeys(6, (i) => `c-${i}`, onVictim('counter'), victim);

  const workers = await startWorkers(
    specs.map((s) => ({
      label: s.label,
      config: {
        connect: d.connect(s.kind),
        prefix,
        onError: s.onError,
        timeoutMs: TIMEOUT_MS,
        probeIntervalMs: PROBE_MS,
        failure: FAILURE,
        windows: WINDOWS,
      },
    })),
  );
  const first = workers[0] as Worker;
  let client: StoreClient | undefined;
  try {
    // Before: the windows saturated, the lockouts taken and seen by every process, all replicated.
    for (const key of [...saturated, ...others]) {
      const drained = await first.drain({ t: 'consume', limiter: 'fixed', key });
      expect(drained.map((x) => x[0])).toEqual([...Array(LIMIT).fill(1), 0]);
    }
    for (const s of locked) {
      const drained = await first.drain({ t: 'fail', subject: s });
      expect(drained.map((x) => [x[0], x[1]])).toEqual([
        ...Array(FAILURE.maxAttempts - 1).fill([1, 'allowed']),
        [0, 'locked'],
      ]);
    }
    const checks = (subjects: string[]): Call[] =>
      subjects.map((s) => ({ t: 'check', subject: s }));
    for (const w of workers) {
      expect((await w.run(checks(locked))).map((x) => [x[0], x[1]])).toEqual(
        locked.map(() => [0, 'locked']),
      );
    }
    await d.replicated();

    // Steady traffic from every process.
    const calls: Call[] = [
      ...[...saturated, ...others].map((key): Call => ({ t: 'consume', limiter: 'fixed', key })),
      ...counters.map((key): Call => ({ t: 'consume', limiter: 'counter', key })),
      ...checks(locked),
      ...checks(lostLocked),
    ];
    const callOf = (e: TrafficEvent) => calls[e[2]] as Call;
    await Promise.all(workers.map((w) => w.start(calls, 4, 10)));
    await sleep(300);

    let seenLost = 0;
    if (crash) {
      // The replica is cut off: what follows reaches the primary alone.
      await d.isolateReplica();
      for (const s of lostLocked) {
        const drained = await first.drain({ t: 'fail', subject: s });
        expect(drained.map((x) => [x[0], x[1]])).toEqual([
          ...Array(FAILURE.maxAttempts - 1).fill([1, 'allowed']),
          [0, 'locked'],
        ]);
      }
      for (const key of lostWindows) {
        const spent = await first.run(
          Array.from(
            { length: LOST_CONSUMES },
            (): Call => ({ t: 'consume', limiter: 'fixed', key }),
          ),
          true,
        );
        expect(spent.map((x) => x[2])).toEqual(
          Array.from({ length: LOST_CONSUMES }, (_, i) => LIMIT - 1 - i),
        );
      }
      for (const w of workers) {
        expect((await w.run(checks(lostLocked))).map((x) => [x[0], x[1]])).toEqual(
          lostLocked.map(() => [0, 'locked']),
        );
      }
      seenLost = Date.now();
      await sleep(100);
    }

    const failedAt = Date.now();
    await d.fail();
    await d.promoted();
    const promotedAt = Date.now();
    await d.settled?.();
    const settledAt = Date.now();
    // Every process decides through Redis again: its last 40 decisions, all made after the
    // promotion, without onError.
    const atPromotion = await Promise.all(workers.map((w) => w.status()));
    await until(
      async () =>
        (await Promise.all(workers.map((w) => w.status()))).every(
          (s, i) => s.sinceDegraded >= 40 && s.count - (atPromotion[i]?.count ?? 0) >= 40,
        ),
      15_000,
      'every process deciding through Redis again after the promotion',
    );
    const events = await Promise.all(workers.map((w) => w.stop()));

    const figures: FailoverFigures = {
      deployment: d.label,
      scenario: crash ? 'crash' : 'planned',
      timeoutMs: TIMEOUT_MS,
      promotedAfterMs: promotedAt - failedAt,
      settledAfterMs: settledAt - failedAt,
      longestWaitMs: 0,
      workers: [],
    };
    for (const [i, spec] of specs.entries()) {
      const mine = events[i] as TrafficEvent[];
      const label = `${spec.label} (${spec.kind}, onError '${spec.onError}')`;
      const longest = Math.max(...mine.map((e) => e[1]));
      // No decision waited longer than timeoutMs, plus the margin.
      expect(longest, `${label}: longest wait`).toBeLessThanOrEqual(TIMEOUT_MS + MARGIN_MS);
      const degraded = mine.filter(isDegraded);
      // onError decided only once the primary was gone (a call in flight when it went counts),
      // and (crash) it did decide.
      expect(
        degraded.filter((e) => e[0] + e[1] < failedAt),
        label,
      ).toEqual([]);
      if (crash) expect(degraded.length, `${label}: decisions made by onError`).toBeGreaterThan(0);
      const allowedBeyond = new Map<string, number>();
      for (const e of mine) {
        const call = callOf(e);
        if (call.t === 'check') {
          // A lockout this process has seen refuses, whoever decides.
          if (locked.includes(call.subject) || e[0] >= seenLost) {
            expect([e[3], reason(e)], `${label}: check ${call.subject}`).toEqual([
              0,
              isDegraded(e) ? 'fallback' : 'locked',
            ]);
          }
        } else if (call.t !== 'consume') {
          throw new Error(`unexpected call in the traffic: ${JSON.stringify(call)}`);
        } else if (isDegraded(e)) {
          // The policy decides: the fallback's own count, allow all, or refuse all with 503.
          if (spec.onError === 'fallback') expect(reason(e), label).toBe('fallback');
          else
            expect([e[3], reason(e)], label).toEqual([
              spec.onError === 'open' ? 1 : 0,
              'store-error',
            ]);
          if (e[3] === 1 && call.limiter === 'fixed')
            allowedBeyond.set(call.key, (allowedBeyond.get(call.key) ?? 0) + 1);
        } else if (call.limiter === 'fixed') {
          // Redis still has every saturated count: it allows none of them.
          expect([e[3], reason(e)], `${label}: ${call.key}`).toEqual([0, 'limited']);
        }
      }
      // The fallback counts from zero in each process: at most the limit per key.
      const perKeyMax = Math.max(0, ...allowedBeyond.values());
      if (spec.onError === 'fallback') expect(perKeyMax).toBeLessThanOrEqual(LIMIT);
      if (spec.onError === 'closed') expect(perKeyMax).toBe(0);
      const lastDegraded = degraded.at(-1);
      figures.workers.push({
        label,
        onError: spec.onError,
        decisions: mine.length,
        degraded: degraded.length,
        longestWaitMs: longest,
        degradedForMs: lastDegraded ? Math.round(lastDegraded[0] + lastDegraded[1] - failedAt) : 0,
        allowedBeyondLimit: [...allowedBeyond.values()].reduce((a, b) => a + b, 0),
        allowedBeyondLimitPerKeyMax: perKeyMax,
      });
      figures.longestWaitMs = Math.max(figures.longestWaitMs, longest);
    }

    // After: what the promoted replica holds.
    client = await d.client();
    for (const s of locked) {
      expect(decodeState(await client.getBuffer(failureKey(prefix, s)))?.kind, s).toBe('L');
    }
    if (crash) {
      // The writes made while the replica was cut off are gone with the primary…
      for (const s of lostLocked) expect(await client.getBuffer(failureKey(prefix, s))).toBeNull();
      for (const key of lostWindows)
        expect(await client.getBuffer(windowKey(prefix, 'fixed', key))).toBeNull();
      // …yet every process that saw those lockouts still refuses them (from its table of seen
      // lockouts: Redis answers that there is none).
      for (const w of workers) {
        expect((await w.run(checks(lostLocked))).map((x) => [x[0], x[1]])).toEqual(
          lostLocked.map(() => [0, 'locked']),
        );
      }
      // A process that never saw one lets maxAttempts − 1 failures through, then Redis locks again.
      const fresh = new RedisStore({
        sendCommand: (client as StoreClient).sendCommand,
        prefix,
        onError: 'closed',
      });
      const auth = createFailureLimiter({ store: fresh, ...FAILURE });
      const relock: boolean[] = [];
      for (let i = 0; i < FAILURE.maxAttempts; i++)
        relock.push((await auth.recordFailure(lostLocked[0] as string)).allowed);
      expect(relock).toEqual([...Array(FAILURE.maxAttempts - 1).fill(true), false]);
      expect(await auth.check(lostLocked[0] as string)).toMatchObject({
        allowed: false,
        reason: 'locked',
      });
      // The windows start again from zero: the limit once more, on top of the lost writes.
      const window = createWindowLimiter({
        store: fresh,
        name: 'fixed',
        limit: LIMIT,
        windowMs: 60_000,
      });
      const extra: number[] = [];
      for (const key of lostWindows) {
        let allowed = 0;
        while ((await window.consume(key)).allowed) allowed++;
        extra.push(allowed + LOST_CONSUMES - LIMIT);
      }
      expect(extra).toEqual(lostWindows.map(() => LOST_CONSUMES));
      fresh.close();
      figures.lost = {
        consumesPerKey: LOST_CONSUMES,
        extraAllowedPerKey: extra,
        lockouts: lostLocked.length,
        refusedByEveryProcessThatSawThem: true,
        failuresAllowedByAFreshProcess: FAILURE.maxAttempts - 1,
      };
    } else {
      // A planned switch loses nothing: each counter holds exactly the units Redis granted, plus
      // at most one per decision that timed out (Redis may still have run it).
      figures.counters = [];
      for (const key of counters) {
        const index = calls.findIndex((c) => c.t === 'consume' && c.key === key);
        const mine = events.flat().filter((e) => e[2] === index);
        const granted = mine.filter((e) => reason(e) === 'allowed').length;
        const degraded = mine.filter(isDegraded).length;
        const count = decodeState(await client.getBuffer(windowKey(prefix, 'counter', key)))
          ?.numbers[2] as number;
        expect(count - granted, key).toBeGreaterThanOrEqual(0);
        expect(count - granted, key).toBeLessThanOrEqual(degraded);
        figures.counters.push({ count, granted, degraded });
      }
    }
    console.log(`[failover figures] ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    await Promise.all(workers.map((w) => w.close()));
    await client?.close();
  }
}
