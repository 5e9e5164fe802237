import { expect, it } from 'vitest';
import type { WithStore } from './with-store.js';
import type { LeaseRule, Store, WindowRule } from '../store.js';

const two: LeaseRule = { max: 2, leaseMs: 1000 };
const one: LeaseRule = { max: 1, leaseMs: 1000 };

/** The store's lease methods, which every store the suite checks implements. */
function leases(s: Store): Required<Pick<Store, 'acquire' | 'release'>> {
  expect(typeof s.acquire, 'Store.acquire').toBe('function');
  expect(typeof s.release, 'Store.release').toBe('function');
  return s as Required<Pick<Store, 'acquire' | 'release'>>;
}

/** The lease part of the store conformance suite (docs/design.md#concurrency). */
export function leaseConformance(withStore: WithStore): void {
  it('leases: at most max held; a renewal counts once; a release makes room', () =>
    withStore(async (store) => {
      const s = leases(store);
      expect(await s.acquire('q', two, 'a')).toEqual({ acquired: true, held: 1 });
      expect(await s.acquire('q', two, 'b')).toEqual({ acquired: true, held: 2 });
      expect(await s.acquire('q', two, 'c')).toEqual({ acquired: false, held: 2 });
      expect(await s.acquire('q', two, 'a')).toEqual({ acquired: true, held: 2 });
      await s.release('q', 'a');
      await s.release('q', 'a');
      await s.release('q', 'never-held');
      await s.release('nothing-here', 'a');
      expect(await s.acquire('q', two, 'c')).toEqual({ acquired: true, held: 2 });
      expect(await s.acquire('other', two, 'a')).toEqual({ acquired: true, held: 1 });
    }));

  it('leases: one expires exactly leaseMs after its last acquire', () =>
    withStore(async (store, advance) => {
      const s = leases(store);
      await s.acquire('e', one, 'a');
      await advance(999);
      expect(await s.acquire('e', one, 'b')).toEqual({ acquired: false, held: 1 });
      await advance(1);
      expect(await s.acquire('e', one, 'b')).toEqual({ acquired: true, held: 1 });
      // Taken at 1000 ms and renewed at 1600 ms, b lives until 2600 ms.
      await advance(600);
      expect(await s.acquire('e', one, 'b')).toEqual({ acquired: true, held: 1 });
      await advance(999);
      expect(await s.acquire('e', one, 'a')).toEqual({ acquired: false, held: 1 });
      await advance(1);
      expect(await s.acquire('e', one, 'a')).toEqual({ acquired: true, held: 1 });
      // A lease that expired is taken back by its holder's next renewal while there is room.
      await advance(1000);
      expect(await s.acquire('e', one, 'b')).toEqual({ acquired: true, held: 1 });
    }));

  it('leases: stamped in the future by a clock that stepped back, one lasts leaseMs from now', () =>
    withStore(async (store, advance, rewind) => {
      const s = leases(store);
      await s.acquire('r', one, 'a');
      await rewind(60_000);
      expect(await s.acquire('r', one, 'b')).toEqual({ acquired: false, held: 1 });
      await advance(999);
      expect(await s.acquire('r', one, 'b')).toEqual({ acquired: false, held: 1 });
      await advance(1);
      expect(await s.acquire('r', one, 'b')).toEqual({ acquired: true, held: 1 });
    }));

  it('leases: no window or failure state; delete leaves them, they leave windows alone', () =>
    withStore(async (store) => {
      const s = leases(store);
      const fixed: WindowRule = { algorithm: 'fixed-window', limit: 2, windowMs: 1000 };
      await store.consume('k', fixed, 1);
      expect(await s.acquire('k', one, 'a')).toEqual({ acquired: true, held: 1 });
      expect((await store.consume('k', fixed, 1)).remaining).toBe(0);
      await store.delete('k');
      expect(await s.acquire('k', one, 'b')).toEqual({ acquired: false, held: 1 });
      expect((await store.consume('k', fixed, 1)).remaining).toBe(1);
    }));

  it('leases: concurrent acquires never hold more than max', () =>
    withStore(async (store) => {
      const s = leases(store);
      const rule: LeaseRule = { max: 5, leaseMs: 60_000 };
      const all = await Promise.all(
        Array.from({ length: 20 }, (_, i) => s.acquire('burst', rule, `l${i}`)),
      );
      expect(all.filter((a) => a.acquired)).toHaveLength(5);
      expect(Math.max(...all.map((a) => a.held))).toBe(5);
    }));
}
