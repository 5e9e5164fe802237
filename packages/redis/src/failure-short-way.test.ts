/*
 * The failure script's short way (a check, or a failure that starts no lockout, on a plain log)
 * against the general way it stands in for: the same script with the short way taken out. Random
 * sequences of failure calls on long logs, with clock steps both ways, run on two keys side by side
 * in one MULTI; after every call the replies and the stored bytes must be equal, and the keys'
 * absolute expiry (PEXPIRETIME) too, but for the server's clock moving on between the two scripts
 * (bounded by a TIME before and after them). The equivalence suite
 * compares decisions with MemoryStore; this one compares what is stored, which no decision shows.
 */
import fc from 'fast-check';
import { Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_HOST, REDIS_PORT, uniquePrefix } from '../../../test/redis/helpers.js';
import { SCRIPT } from './script.js';

/** The line that opens the short way; the general script has it never taken. */
const SHORT_WAY = "if raw and (code == 'r' or code == 'k') and string.sub(raw, 1, 1) == 'L' then";

/** One call: an op of the script (see script.ts) and how far the clock moves first. */
type Call =
  | { readonly op: 'k' | 'r' | 's'; readonly step: number }
  | { readonly op: 'burst'; readonly step: number; readonly n: number }
  | { readonly op: 'b'; readonly step: number; readonly ms: number }
  | { readonly op: 'd'; readonly step: number; readonly member: string };

/** A reply of `TIME`: seconds and microseconds. */
type Time = [string, string];
const msOf = ([sec, usec]: Time) => Number(sec) * 1000 + Math.floor(Number(usec) / 1000);

const RUNS = Number(process.env.EQUIV_RUNS ?? 200);

describe('the failure script’s short way', () => {
  let redis: IORedis;
  const prefix = uniquePrefix('short-way');

  beforeAll(async () => {
    redis = new IORedis({ host: REDIS_HOST, port: REDIS_PORT, maxRetriesPerRequest: 1 });
    await redis.ping();
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('is the general script with the short way taken out exactly once', () => {
    expect(SCRIPT.split(SHORT_WAY).length).toBe(2);
  });

  it('leaves the same bytes, expiry and replies as the general way', async () => {
    const [fastSha, generalSha] = (await Promise.all([
      redis.script('LOAD', SCRIPT),
      redis.script('LOAD', SCRIPT.replace(SHORT_WAY, 'if false then')),
    ])) as [string, string];
    const w = fc.constantFrom(1_000, 60_000, 3_600_000);
    const rule = fc.record({
      maxAttempts: fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 200, max: 600 })),
      windowMs: w,
      lockoutMs: fc.constantFrom(1_000, 300_000),
    });
    // Steps biased to the window's edges (a failure expiring at the very instant), both ways.
    const callsOf = (windowMs: number) => {
      const step = fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(0, 1, 2, windowMs - 1, windowMs, windowMs + 1) },
        { weight: 1, arbitrary: fc.integer({ min: -5_000, max: 5_000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 4_000_000 }) },
      );
      const call: fc.Arbitrary<Call> = fc.oneof(
        { weight: 4, arbitrary: fc.record({ op: fc.constantFrom('k', 'r'), step }) },
        { weight: 1, arbitrary: fc.record({ op: fc.constant('s'), step }) },
        {
          weight: 2,
          arbitrary: fc.record({
            op: fc.constant('burst'),
            step,
            n: fc.integer({ min: 1, max: 300 }),
          }),
        },
        {
          weight: 1,
          arbitrary: fc.record({
            op: fc.constant('b'),
            step,
            ms: fc.integer({ min: 1, max: 10_000 }),
          }),
        },
        {
          weight: 1,
          arbitrary: fc.record({ op: fc.constant('d'), step, member: fc.constantFrom('a', 'b') }),
        },
      );
      return fc.array(call, { minLength: 1, maxLength: 25 });
    };
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        rule.chain((r) => fc.tuple(fc.constant(r), callsOf(r.windowMs))),
        async ([r, calls]) => {
          run++;
          const fast = `${prefix}${run}:fast`;
          const slow = `${prefix}${run}:general`;
          let now = 1_760_000_000_000;
          const args = [String(r.maxAttempts), String(r.windowMs), String(r.lockoutMs)];
          for (const c of calls) {
            now += c.step;
            // A burst's calls go in one MULTI, each on both keys in turn: a long log in one trip.
            const times = c.op === 'burst' ? c.n : 1;
            const op = c.op === 'burst' ? 'r' : c.op;
            const extra = c.op === 'b' ? [String(c.ms)] : c.op === 'd' ? [c.member] : [];
            const m = redis.multi().time();
            for (let i = 0; i < times; i++) {
              m.evalsha(fastSha, 1, fast, op, ...args, ...extra, String(now));
              m.evalsha(generalSha, 1, slow, op, ...args, ...extra, String(now));
            }
            m.time();
            m.getBuffer(fast);
            m.getBuffer(slow);
            m.call('PEXPIRETIME', fast);
            m.call('PEXPIRETIME', slow);
            const out = (await m.exec()) as [Error | null, unknown][];
            for (const [err] of out) expect(err).toBeNull();
            const v = out.map(([, value]) => value);
            for (let i = 1; i < 2 * times; i += 2) expect([op, v[i]]).toEqual([op, v[i + 1]]);
            const [before, after, fastValue, slowValue, fastExpiry, slowExpiry] = [
              v[0],
              ...v.slice(2 * times + 1),
            ] as [Time, Time, Buffer | null, Buffer | null, number, number];
            expect(fastValue).toEqual(slowValue);
            // Each PEXPIRE counts from the server's cached clock in ms, which Redis 7.0 renews
            // for each command: the general script's, run after the short way's, counts from the
            // same millisecond or a later one, by at most the time both took (TIME before and
            // after them) and the cache's own millisecond. No key, or no expiry: the same code.
            if (slowExpiry < 0) expect(fastExpiry).toBe(slowExpiry);
            else {
              const lag = slowExpiry - fastExpiry;
              expect(lag).toBeGreaterThanOrEqual(0);
              expect(lag).toBeLessThanOrEqual(msOf(after) - msOf(before) + 1);
            }
          }
          await redis.del(fast, slow);
        },
      ),
      {
        numRuns: RUNS,
        // A failure expiring at the very instant of the next call: a failure after it (appended
        // in place unless one expired), and a check after it (the log rewritten without it).
        examples: [
          [
            [
              { maxAttempts: 600, windowMs: 1_000, lockoutMs: 1_000 },
              [
                { op: 'r', step: 0 },
                { op: 'burst', step: 1, n: 3 },
                { op: 'r', step: 999 },
                { op: 'k', step: 1 },
                { op: 'r', step: 0 },
              ],
            ],
          ],
        ],
      },
    );
  }, 120_000);
});
