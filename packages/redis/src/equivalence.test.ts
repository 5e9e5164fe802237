/*
 * Property test: random sequences of every operation, over random rules and random clock steps
 * (biased to window and lockout boundaries, and stepping back too, as wall clocks do), give
 * identical decisions from the Lua script in a real Redis and from core's MemoryStore. Keys are
 * shared between algorithms on purpose, so a key that changes kind is covered too. Refunds are
 * mostly aimed at the instants of earlier consumes (± 1 ms: the windows' edges), else at random
 * ages, and a peek after one may compare the state they left. Every decision also keeps the bounds
 * a clock step must not break (no wait beyond lockoutMs or the window's span), and waiting the
 * advertised retryAfterMs is enough, on both stores.
 *
 * Each property runs three ways: with the local deny table off, on (the default: refusals answered
 * by the process without Redis), and as two processes (two RedisStores on one prefix, each with its
 * own subscriber connection, every call through one of them at random) against one MemoryStore:
 * local answers, invalidations and all, still equal MemoryStore decision for decision (there the
 * clock only moves forward: see the `rewind` case).
 */
import {
  type Decision,
  type FailureRule,
  MemoryStore,
  type TrustRule,
  type WindowRule,
} from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import fc from 'fast-check';
import { Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deletePrefix,
  ioredis,
  REDIS_HOST,
  REDIS_PORT,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { RedisStore, type SendCommand, type Subscribe } from './index.js';
import {
  failureRule,
  oneRuleEach,
  type Op as SharedOp,
  opArb,
  trustRule,
  twoRulesEach,
} from '../test/equivalence-ops.js';

/** How the Redis side runs: deny table off, on, or two processes sharing Redis. */
type Mode = 'off' | 'on' | 'two';

/** A subscriber connection of its own, counting the messages it hands to the store. */
async function subscriber() {
  const sub = new IORedis({
    host: REDIS_HOST,
    port: REDIS_PORT,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  sub.on('error', () => {});
  await sub.connect();
  let received = 0;
  let subscribed: Promise<unknown> = Promise.resolve();
  const subscribe: Subscribe = (channel, onMessage) => {
    sub.on('message', (ch: string, message: string) => {
      if (ch !== channel) return;
      received++;
      onMessage(message);
    });
    subscribed = sub.subscribe(channel);
    return () => sub.disconnect();
  };
  return { subscribe, received: () => received, ready: () => subscribed };
}

type Op = SharedOp<string>;

// The first property uses one rule per algorithm per run: a key may change algorithm, but never
// meets two rules of the same algorithm (limiters keep one rule per name, and the name is in the
// key). The second gives each algorithm and the failure log two rules, as a limiter reconfigured
// live (`reconfigure`) does.
const op = opArb(fc.constantFrom('a', 'b', 'c'));

/** The longest wait a window rule can advertise: one window; two for the sliding window. */
const span = (rule: WindowRule) =>
  rule.algorithm === 'sliding-window' ? 2 * rule.windowMs : rule.windowMs;

/**
 * `held`: the longest a failure state under the same key can last (a window call that meets one
 * is refused until it ends, and never erases it).
 */
function windowBounded(d: Decision, rule: WindowRule, held: number): void {
  if (!d.allowed && d.remaining === 0 && d.retryAfterMs > span(rule)) {
    expect(d.resetMs).toBe(d.retryAfterMs);
    expect(d.retryAfterMs).toBeLessThanOrEqual(held);
    return;
  }
  expect(d.retryAfterMs).toBeGreaterThanOrEqual(d.allowed ? 0 : 1);
  expect(d.retryAfterMs).toBeLessThanOrEqual(d.allowed ? 0 : span(rule));
  expect(d.resetMs).toBeGreaterThanOrEqual(0);
  expect(d.resetMs).toBeLessThanOrEqual(span(rule));
  expect(d.remaining).toBeGreaterThanOrEqual(0);
  expect(d.remaining).toBeLessThanOrEqual(rule.limit);
}

/** The longest earned lockout of `rule` (an escalating one's at most its cap). */
const longest = (rule: FailureRule) => Math.max(rule.lockoutMs, rule.escalate?.maxLockoutMs ?? 0);

/** `banned`: the longest ban set so far (a ban lasts its own length, not `lockoutMs`). */
function failureBounded(d: Decision, rule: FailureRule, banned: number): void {
  if (d.allowed) {
    expect(d.retryAfterMs).toBe(0);
    expect(d.resetMs).toBeLessThanOrEqual(rule.windowMs);
  } else {
    expect(d.retryAfterMs).toBeGreaterThanOrEqual(1);
    expect(d.retryAfterMs).toBeLessThanOrEqual(Math.max(longest(rule), banned));
    expect(d.resetMs).toBe(d.retryAfterMs);
  }
}

describe('RedisStore ≡ MemoryStore on random operation sequences', () => {
  let client: TestClient;
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(() => client?.close());

  /** Calls answered by a deny table, over every run of a property (it must be exercised). */
  let answered = 0;

  /**
   * Runs `ops` on both stores; `rules[i % n]` and `frules[i % n]` pick the rule of each call. In
   * mode `two`, `via[i]` picks the process of the i-th operation.
   */
  async function run(
    mode: Mode,
    rules: WindowRule[],
    frules: FailureRule[],
    trule: TrustRule,
    ops: Op[],
    via: boolean[] = [],
  ): Promise<void> {
    const clock = manualClock(1_700_000_000_000);
    const prefix = uniquePrefix('equiv');
    // No background sweep: when garbage is collected is no part of a decision, and Redis, whose
    // keys live at least 60 s of real time in this mode, never collects during a run. (A sweep
    // firing in virtual time would forget a dead key that a clock step back could otherwise
    // revive in Redis: clamped, within bounds, but different.)
    const memory = new MemoryStore({ clock, timers: clock, sweepIntervalMs: 2 ** 31 - 1 });
    let published = 0;
    const send: SendCommand = (args, key) => {
      if (args[0] === 'PUBLISH') published++;
      return client.sendCommand(args, key);
    };
    const subs = mode === 'two' ? [await subscriber(), await subscriber()] : [];
    const stores = (mode === 'two' ? [0, 1] : [0]).map(
      (i) =>
        new RedisStore({
          sendCommand: send,
          prefix,
          clock,
          onError: 'closed',
          // Entries live as long as their refusal: staleness is no part of a decision.
          localDeny: mode === 'off' ? false : { maxStaleMs: 3_600_000 },
          ...(subs[i] && { subscribe: subs[i].subscribe }),
        }),
    );
    for (const sub of subs) await sub.ready();
    let redis = stores[0] as RedisStore;
    /** Every invalidation published so far has reached every subscriber (pub/sub is async). */
    const delivered = async () => {
      for (let i = 0; subs.some((sub) => sub.received() < published); i++) {
        if (i > 1000) throw new Error('an invalidation never arrived');
        await new Promise((r) => setTimeout(r, 1));
      }
    };
    const windowRuleOf = (i: number) => rules[i % rules.length] as WindowRule;
    const failureRuleOf = (i: number) => frules[i % frules.length] as FailureRule;
    // A failure state is stamped without a clamp a window call could apply: a step back lengthens it.
    let rewound = 0;
    let longestBan = 0;
    // An escalating key outlives its lockout by maxLockoutMs (its step is remembered that long).
    const held = () =>
      rewound +
      Math.max(longestBan, ...frules.map((r) => Math.max(longest(r), r.windowMs))) +
      Math.max(0, ...frules.map((r) => r.escalate?.maxLockoutMs ?? 0));
    // When each key's calls were made, latest first: refunds are aimed at them and their edges.
    const consumed = new Map<string, number[]>();
    // One process alone meets every kind under one key, as the first property wants. Processes
    // sharing a prefix give each limiter its own keys (the limiter name is in the key), so in mode
    // `two` each kind has its own: a key that changes kind or rule in ANOTHER process is the
    // documented maxStaleMs case (see local-deny.test.ts), not an exact one.
    const kinds = ['fixed-window', 'sliding-window', 'token-bucket', 'failures'] as const;
    const keyOf = (key: string, kind: (typeof kinds)[number]) =>
      mode === 'two' ? `${kind}:${key}` : key;
    // `again` unrolled: the latest call, repeated through the same process.
    const calls: { o: Op; v: boolean }[] = [];
    let latest: { o: Op; v: boolean } | undefined;
    for (const [i, o] of ops.entries()) {
      if (o.t !== 'again') {
        calls.push({ o, v: via[i] === true });
        if (['consume', 'peek', 'check', 'record', 'distinct', 'success'].includes(o.t))
          latest = calls[calls.length - 1];
      } else if (latest !== undefined) {
        for (let n = 0; n < o.n; n++) calls.push(latest);
      }
    }
    try {
      for (const { o, v } of calls) {
        redis = stores[v ? 1 : 0] ?? redis;
        await delivered();
        switch (o.t) {
          case 'advance':
            clock.advance(o.ms);
            break;
          case 'rewind':
            // Two processes share this one clock, so a step back reaches a process that missed
            // the end of a refusal it holds (another one saw it): that entry answers again until
            // its end, the bounded case local-deny.test.ts states. One process (mode 'on') is
            // stepped back with its table.
            if (mode === 'two') break;
            rewound += o.ms;
            clock.set(clock.now() - o.ms);
            break;
          case 'consume': {
            const rule = windowRuleOf(o.rule);
            const key = keyOf(o.key, rule.algorithm);
            const d = memory.consume(key, rule, o.cost);
            expect(await redis.consume(key, rule, o.cost)).toEqual(d);
            windowBounded(d, rule, held());
            consumed.set(key, [clock.now(), ...(consumed.get(key) ?? [])]);
            if (!d.allowed && o.wait && o.cost <= rule.limit) {
              clock.advance(d.retryAfterMs);
              const after = memory.consume(key, rule, o.cost);
              expect(await redis.consume(key, rule, o.cost)).toEqual(after);
              expect(after.allowed).toBe(true);
            }
            break;
          }
          case 'peek': {
            const rule = windowRuleOf(o.rule);
            const key = keyOf(o.key, rule.algorithm);
            const d = memory.peek(key, rule);
            expect(await redis.peek(key, rule)).toEqual(d);
            windowBounded(d, rule, held());
            if (!d.allowed && o.wait) {
              clock.advance(d.retryAfterMs);
              const after = memory.consume(key, rule, 1);
              expect(await redis.consume(key, rule, 1)).toEqual(after);
              expect(after.allowed).toBe(true);
            }
            break;
          }
          case 'refund': {
            const rule = windowRuleOf(o.rule);
            const key = keyOf(o.key, rule.algorithm);
            const at = o.since ? consumed.get(key)?.[o.since.n] : undefined;
            const ago =
              o.since && at !== undefined ? Math.max(0, clock.now() - at + o.since.delta) : o.ago;
            memory.refund(key, rule, o.cost, ago);
            await redis.refund(key, rule, o.cost, ago);
            expect(redis.degraded).toBe(false);
            if (o.check) {
              const d = memory.peek(key, rule);
              expect(await redis.peek(key, rule)).toEqual(d);
              windowBounded(d, rule, held());
            }
            break;
          }
          case 'check': {
            const frule = failureRuleOf(o.frule);
            const key = keyOf(o.key, 'failures');
            const d = memory.checkFailures(key, frule);
            expect(await redis.checkFailures(key, frule)).toEqual(d);
            failureBounded(d, frule, longestBan);
            if (!d.allowed && o.wait) {
              clock.advance(d.retryAfterMs);
              const after = memory.checkFailures(key, frule);
              expect(await redis.checkFailures(key, frule)).toEqual(after);
              expect(after).toMatchObject({ allowed: true, remaining: frule.maxAttempts });
            }
            break;
          }
          case 'record': {
            const frule = failureRuleOf(o.frule);
            const key = keyOf(o.key, 'failures');
            const d = memory.recordFailure(key, frule);
            expect(await redis.recordFailure(key, frule)).toEqual(d);
            failureBounded(d, frule, longestBan);
            break;
          }
          case 'distinct': {
            const frule = failureRuleOf(o.frule);
            const key = keyOf(o.key, 'failures');
            const d = memory.recordDistinct(key, o.member, frule);
            expect(await redis.recordDistinct(key, o.member, frule)).toEqual(d);
            failureBounded(d, frule, longestBan);
            break;
          }
          case 'trust': {
            const table = `t${o.table}`;
            memory.trust(table, `g${o.group}`, `m${o.member}`, trule);
            await redis.trust(table, `g${o.group}`, `m${o.member}`, trule);
            expect(redis.degraded).toBe(false);
            break;
          }
          case 'trusted': {
            const table = `t${o.table}`;
            const groups = o.groups.map((g) => `g${g}`);
            const known = memory.trusted(table, `m${o.member}`, groups, trule);
            expect(await redis.trusted(table, `m${o.member}`, groups, trule)).toEqual(known);
            expect(redis.degraded).toBe(false);
            break;
          }
          case 'success': {
            const frule = failureRuleOf(o.frule);
            const key = keyOf(o.key, 'failures');
            const d = memory.recordSuccess(key, frule);
            expect(await redis.recordSuccess(key, frule)).toEqual(d);
            failureBounded(d, frule, longestBan);
            break;
          }
          case 'delete':
            for (const key of new Set(kinds.map((kind) => keyOf(o.key, kind)))) {
              await redis.delete(key);
              memory.delete(key);
              consumed.delete(key);
            }
            break;
          case 'ban': {
            const frule = failureRuleOf(o.frule);
            const key = keyOf(o.key, 'failures');
            longestBan = Math.max(longestBan, o.ms);
            const d = memory.ban(key, frule, o.ms);
            expect(await redis.ban(key, frule, o.ms)).toEqual(d);
            break;
          }
          case 'lockouts': {
            const frule = failureRuleOf(o.frule);
            const listed = memory.lockouts('', o.limit, frule);
            expect(await redis.lockouts('', o.limit, frule)).toEqual(listed);
            expect(redis.degraded).toBe(false);
            break;
          }
          case 'restamp': {
            const [before, after] = o.failures
              ? [failureRuleOf(o.from), failureRuleOf(o.to)]
              : [windowRuleOf(o.from), windowRuleOf(o.to)];
            memory.restamp('', before, after);
            await redis.restamp('', before, after);
            expect(redis.degraded).toBe(false);
            break;
          }
          case 'again':
            break;
        }
      }
    } finally {
      for (const store of stores) {
        const deny = store.localDeny;
        if (deny !== false) answered += deny.answered;
        store.close();
      }
      memory.close();
      await deletePrefix(client.sendCommand, prefix);
      // The trust tables' keys: `{<prefix><table>}:…`.
      await deletePrefix(client.sendCommand, `{${prefix}`);
    }
  }

  const runs = Number(process.env.EQUIV_RUNS ?? 300);
  // EQUIV_SEED and EQUIV_PATH replay a counterexample fast-check reported (its seed and path).
  const replay =
    process.env.EQUIV_SEED === undefined
      ? {}
      : {
          seed: Number(process.env.EQUIV_SEED),
          ...(process.env.EQUIV_PATH !== undefined && { path: process.env.EQUIV_PATH }),
        };
  // Every mode gets the full number of runs with the deny table on; two processes cost twice the
  // round trips, so they get half of them.
  const modes: [Mode, string, number][] = [
    ['off', 'local deny table off', runs],
    ['on', 'local deny table on', runs],
    ['two', 'two processes, deny tables and subscribers', Math.max(1, Math.ceil(runs / 2))],
  ];

  describe.each(modes)('%s: %s', (mode, _, numRuns) => {
    beforeAll(() => {
      answered = 0;
    });
    afterAll(() => {
      // The deny table answered locally in these runs (else the property proves nothing about it).
      // How often depends on the sequences drawn: 136–182 of 300 runs with one process and 15–58
      // of 150 with two were seen, so the bound is one in fifty, not a rate.
      if (mode === 'off') expect(answered).toBe(0);
      else if (numRuns >= 30) expect(answered).toBeGreaterThan(numRuns / 50);
    });

    it('every decision is identical, field for field', async () => {
      await fc.assert(
        fc.asyncProperty(
          oneRuleEach,
          failureRule,
          trustRule,
          fc.array(op, { minLength: 1, maxLength: 40 }),
          fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
          (rules, frule, trule, ops, via) => run(mode, rules, [frule], trule, ops, via),
        ),
        { numRuns, ...replay },
      );
    });

    // Two rules of a kind on one key from two processes is a limit reconfigured in one process
    // and not yet in the other: bounded by maxStaleMs, not exact (tested in local-deny.test.ts),
    // so that property is stated for one process only.
    if (mode !== 'two')
      it('every decision is identical when a key meets a second rule of its kind (reconfigure)', async () => {
        await fc.assert(
          fc.asyncProperty(
            twoRulesEach,
            fc.tuple(failureRule, failureRule),
            trustRule,
            fc.array(op, { minLength: 1, maxLength: 40 }),
            fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
            (rules, frules, trule, ops, via) => run(mode, rules, frules, trule, ops, via),
          ),
          { numRuns, ...replay },
        );
      });
  });
});
