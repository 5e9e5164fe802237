import { expect, it } from 'vitest';
import type { WithStore } from './with-store.js';
import type { Decision } from '../decision.js';
import { d } from './expected-decision.js';
import type { FailureRule, StoreCall, TrustRule } from '../store.js';
import { batchCalls } from '../store-batch.js';

const started = (decision: Decision) => ({ ...decision, lockoutStarted: true });

const escalating: FailureRule = {
  maxAttempts: 2,
  windowMs: 1000,
  lockoutMs: 1000,
  escalate: { factor: 3, maxLockoutMs: 10_000 },
};
const distinct: FailureRule = { maxAttempts: 3, windowMs: 1000, lockoutMs: 5000 };
const trustRule: TrustRule = { trustMs: 1000, maxTrusted: 3 };

/**
 * The part of the store suite the auth layers need (docs/design.md#defence-in-depth): escalating
 * lockouts, distinct-member failure logs and trust tables, at their boundaries.
 * @internal called by `describeStoreConformance`
 */
export function layerConformance(withStore: WithStore): void {
  it('escalate: a lockout within maxLockoutMs of the last one lasts factor times longer, up to the cap', () =>
    withStore(async (s, advance) => {
      const lockOnce = async (ms: number) => {
        expect(await s.recordFailure('e', escalating)).toEqual(
          d('e', 2, true, 'allowed', 1, 0, 1000),
        );
        expect(await s.recordFailure('e', escalating)).toEqual(
          started(d('e', 2, false, 'locked', 0, ms, ms)),
        );
        expect(await s.checkFailures('e', escalating)).toEqual(
          d('e', 2, false, 'locked', 0, ms, ms),
        );
      };
      await lockOnce(1000);
      await advance(1000);
      // Over: the history is gone (every attempt left), the step is remembered.
      expect(await s.checkFailures('e', escalating)).toEqual(d('e', 2, true, 'allowed', 2, 0, 0));
      await lockOnce(3000);
      await advance(2999);
      expect(await s.recordFailure('e', escalating)).toEqual(d('e', 2, false, 'locked', 0, 1, 1));
      await advance(1);
      await lockOnce(9000);
      await advance(9000);
      await lockOnce(10_000);
      expect(
        ((await s.lockouts?.('', 10, escalating)) ?? []).map((l) => [l.key, l.retryAfterMs, l.ban]),
      ).toEqual([['e', 10_000, false]]);
      // Exactly maxLockoutMs after the end the step is forgotten: back to lockoutMs.
      await advance(10_000 + 10_000);
      await lockOnce(1000);
      // One millisecond earlier it would still have escalated.
      await advance(1000 + 9999);
      await lockOnce(3000);
    }));

  it('escalate: a success or a delete forgets the step; a clock step back is bounded by the escalated length', () =>
    withStore(async (s, advance, rewind) => {
      for (let i = 0; i < 2; i++) await s.recordFailure('es', escalating);
      await advance(1000);
      expect(await s.recordSuccess('es', escalating)).toEqual(d('es', 2, true, 'allowed', 2, 0, 0));
      await s.recordFailure('es', escalating);
      expect(await s.recordFailure('es', escalating)).toEqual(
        started(d('es', 2, false, 'locked', 0, 1000, 1000)),
      );
      await advance(1000);
      await s.recordFailure('es', escalating);
      expect(await s.recordFailure('es', escalating)).toEqual(
        started(d('es', 2, false, 'locked', 0, 3000, 3000)),
      );
      // The clock steps back 20 s: the escalated lockout is clamped to its own length, not 1000.
      await rewind(20_000);
      expect(await s.checkFailures('es', escalating)).toEqual(
        d('es', 2, false, 'locked', 0, 3000, 3000),
      );
      await advance(3000);
      await s.delete('es');
      await s.recordFailure('es', escalating);
      expect(await s.recordFailure('es', escalating)).toEqual(
        started(d('es', 2, false, 'locked', 0, 1000, 1000)),
      );
    }));

  it('recordDistinct: only distinct members count, each for its latest failure in the window', () =>
    withStore(async (s, advance) => {
      expect(typeof s.recordDistinct, 'Store.recordDistinct').toBe('function');
      const fail = (member: string) => s.recordDistinct?.('sp', member, distinct);
      expect(await fail('a')).toEqual(d('sp', 3, true, 'allowed', 2, 0, 1000));
      await advance(300);
      expect(await fail('b')).toEqual(d('sp', 3, true, 'allowed', 1, 0, 1000));
      await advance(300);
      // `a` again: still two members, `a` now counts from t=600.
      expect(await fail('a')).toEqual(d('sp', 3, true, 'allowed', 1, 0, 1000));
      expect(await s.checkFailures('sp', distinct)).toEqual(
        d('sp', 3, true, 'allowed', 1, 0, 1000),
      );
      // t=1300: `b` (t=300) has expired exactly, `a` (t=600) has 300 ms left.
      await advance(700);
      expect(await s.checkFailures('sp', distinct)).toEqual(d('sp', 3, true, 'allowed', 2, 0, 300));
      expect(await fail('b')).toEqual(d('sp', 3, true, 'allowed', 1, 0, 1000));
      expect(await fail('c')).toEqual(started(d('sp', 3, false, 'locked', 0, 5000, 5000)));
      // During the lockout nothing counts or extends it; the end forgets every member.
      await advance(1000);
      expect(await fail('d')).toEqual(d('sp', 3, false, 'locked', 0, 4000, 4000));
      await advance(4000);
      expect(await fail('a')).toEqual(d('sp', 3, true, 'allowed', 2, 0, 1000));
      await s.delete('sp');
      expect(await s.checkFailures('sp', distinct)).toEqual(d('sp', 3, true, 'allowed', 3, 0, 0));
    }));

  it('recordDistinct: long and odd members stay distinct; concurrent failures lock exactly once', () =>
    withStore(async (s) => {
      const long = 'x'.repeat(256);
      for (const m of [long, `${long.slice(1)}y`, 'a:b\u0000c'])
        await s.recordDistinct?.('odd', m, distinct);
      expect(await s.checkFailures('odd', distinct)).toEqual(
        d('odd', 3, false, 'locked', 0, 5000, 5000),
      );
      const all = await Promise.all(
        Array.from({ length: 12 }, (_, i) => s.recordDistinct?.('race', `m${i % 6}`, distinct)),
      );
      expect(all.filter((x) => (x as { lockoutStarted?: true }).lockoutStarted)).toHaveLength(1);
      expect(all.filter((x) => x?.allowed)).toHaveLength(2);
    }));

  it('trust: a trust lasts trustMs from its latest success, per group', () =>
    withStore(async (s, advance, rewind) => {
      expect(typeof s.trust, 'Store.trust').toBe('function');
      expect(typeof s.trusted, 'Store.trusted').toBe('function');
      const has = (member: string, ...groups: string[]) =>
        s.trusted?.('t', member, groups, trustRule);
      expect(await has('m1', 'g1')).toEqual([false]);
      await s.trust?.('t', 'g1', 'm1', trustRule);
      expect(await has('m1', 'g1', 'g2')).toEqual([true, false]);
      expect(await has('m2', 'g1')).toEqual([false]);
      expect(await s.trusted?.('other', 'm1', ['g1'], trustRule)).toEqual([false]);
      await advance(600);
      await s.trust?.('t', 'g1', 'm1', trustRule);
      await advance(999);
      expect(await has('m1', 'g1')).toEqual([true]);
      await advance(1);
      expect(await has('m1', 'g1')).toEqual([false]);
      // A trust stamped in the future (the clock stepped back) counts as earned now.
      await s.trust?.('t', 'g1', 'm3', trustRule);
      await rewind(5000);
      expect(await has('m3', 'g1')).toEqual([true]);
      await advance(999);
      expect(await has('m3', 'g1')).toEqual([true]);
    }));

  it('trust: among the largest groups, the one changed longest ago gives its least recently earned trust', () =>
    withStore(async (s, advance) => {
      const rule: TrustRule = { trustMs: 60_000, maxTrusted: 4 };
      const put = (group: string, member: string) => s.trust?.('c', group, member, rule);
      const has = async (pairs: [string, string][]) =>
        Promise.all(pairs.map(async ([g, m]) => (await s.trusted?.('c', m, [g], rule))?.[0]));
      // gA holds the oldest trust, but gB is the group that changed longest ago.
      await put('gA', 'a1');
      await advance(5);
      await put('gB', 'b1');
      await advance(1);
      await put('gB', 'b2');
      await advance(4);
      await put('gA', 'a2');
      await advance(1);
      await put('gC', 'c1');
      expect(
        await has([
          ['gA', 'a1'],
          ['gA', 'a2'],
          ['gB', 'b1'],
          ['gB', 'b2'],
          ['gC', 'c1'],
        ]),
      ).toEqual([true, true, false, true, true]);
      // A refresh is a change: gB (refreshed now) is no longer the one changed longest ago.
      await put('gB', 'b2');
      await put('gD', 'd1');
      expect(
        await has([
          ['gA', 'a1'],
          ['gA', 'a2'],
          ['gB', 'b2'],
          ['gC', 'c1'],
          ['gD', 'd1'],
        ]),
      ).toEqual([false, true, true, true, true]);
    }));

  it('trust: a full table forgets the expired first, then the oldest of the largest group; a flood of one group replaces only its own', () =>
    withStore(async (s, advance) => {
      const put = (group: string, member: string) => s.trust?.('b', group, member, trustRule);
      const has = async (pairs: [string, string][]) =>
        Promise.all(pairs.map(async ([g, m]) => (await s.trusted?.('b', m, [g], trustRule))?.[0]));
      await put('g1', 'm1');
      await advance(10);
      await put('g2', 'm2');
      await advance(10);
      // A flood of one group: it never takes g1's or g2's trust.
      for (let i = 0; i < 6; i++) {
        await put('g3', `f${i}`);
        await advance(1);
      }
      expect(
        await has([
          ['g1', 'm1'],
          ['g2', 'm2'],
          ['g3', 'f5'],
          ['g3', 'f4'],
        ]),
      ).toEqual([true, true, true, false]);
      // A new group makes room from the largest; ties go to the oldest trust.
      await put('g4', 'm4');
      expect(
        await has([
          ['g1', 'm1'],
          ['g2', 'm2'],
          ['g3', 'f5'],
          ['g4', 'm4'],
        ]),
      ).toEqual([false, true, true, true]);
      // g1 comes back: its first trust takes the oldest of the (tied) largest, its second replaces
      // its own first.
      await put('g1', 'n1');
      await put('g1', 'n2');
      expect(
        await has([
          ['g2', 'm2'],
          ['g3', 'f5'],
          ['g4', 'm4'],
          ['g1', 'n1'],
          ['g1', 'n2'],
        ]),
      ).toEqual([false, true, true, false, true]);
      // All expired: a new trust takes their room, nothing live goes.
      await advance(1000);
      await put('g5', 'x');
      await put('g6', 'y');
      await put('g7', 'z');
      expect(
        await has([
          ['g5', 'x'],
          ['g6', 'y'],
          ['g7', 'z'],
          ['g1', 'n1'],
        ]),
      ).toEqual([true, true, true, false]);
    }));

  it('batch: answers what each method would, in order, each call seeing the ones before it', () =>
    withStore(async (s) => {
      const rule: FailureRule = { maxAttempts: 2, windowMs: 1000, lockoutMs: 5000 };
      const calls: StoreCall[] = [
        { op: 'recordFailure', key: 'bf', rule },
        { op: 'checkFailures', key: 'bf', rule },
        { op: 'recordFailure', key: 'bf', rule },
        { op: 'recordSuccess', key: 'bf', rule },
        { op: 'checkFailures', key: 'bn', rule },
        { op: 'recordSuccess', key: 'bn', rule },
        { op: 'recordDistinct', key: 'bd', member: 'm1', rule: distinct },
        { op: 'recordDistinct', key: 'bd', member: 'm1', rule: distinct },
        { op: 'recordDistinct', key: 'bd', member: 'm2', rule: distinct },
        { op: 'trusted', table: 'bt', member: 'c1', groups: ['g'], rule: trustRule },
        { op: 'trust', table: 'bt', group: 'g', member: 'c1', rule: trustRule },
        { op: 'trusted', table: 'bt', member: 'c1', groups: ['g', 'h'], rule: trustRule },
      ];
      expect(await batchCalls(s, calls)).toEqual([
        d('bf', 2, true, 'allowed', 1, 0, 1000),
        d('bf', 2, true, 'allowed', 1, 0, 1000),
        started(d('bf', 2, false, 'locked', 0, 5000, 5000)),
        // A success never lifts a lockout, even one started in the same batch.
        d('bf', 2, false, 'locked', 0, 5000, 5000),
        d('bn', 2, true, 'allowed', 2, 0, 0),
        d('bn', 2, true, 'allowed', 2, 0, 0),
        d('bd', 3, true, 'allowed', 2, 0, 1000),
        // The same member again refreshes its time and does not count twice.
        d('bd', 3, true, 'allowed', 2, 0, 1000),
        d('bd', 3, true, 'allowed', 1, 0, 1000),
        [false],
        undefined,
        [true, false],
      ]);
      // What the batch wrote is what the methods read afterwards.
      expect(await s.checkFailures('bf', rule)).toEqual(d('bf', 2, false, 'locked', 0, 5000, 5000));
      expect(await s.recordDistinct?.('bd', 'm3', distinct)).toEqual(
        started(d('bd', 3, false, 'locked', 0, 5000, 5000)),
      );
      expect(await batchCalls(s, [])).toEqual([]);
    }));
}
