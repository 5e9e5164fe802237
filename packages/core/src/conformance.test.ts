import { describeStoreConformance, manualClock } from '@portcullis/core/testing';
import { MemoryStore } from './memory-store.js';

describeStoreConformance('MemoryStore', () => {
  const clock = manualClock(1_000_000);
  const store = new MemoryStore({ clock, timers: clock });
  return {
    store,
    advance: (ms) => clock.advance(ms),
    rewind: (ms) => clock.set(clock.now() - ms),
    teardown: () => store.close(),
  };
});

const HIDDEN = new Set([
  'acquire',
  'release',
  'accessRules',
  'putAccessRule',
  'removeAccessRule',
  'watchAccess',
]);

// A custom store may leave the optional leases and access lists out: the suite then checks it has
// none of their methods.
describeStoreConformance(
  'a store without leases or access lists (MemoryStore with their methods hidden)',
  () => {
    const clock = manualClock(1_000_000);
    const inner = new MemoryStore({ clock, timers: clock });
    const store = new Proxy(inner, {
      get(target, name) {
        if (typeof name === 'string' && HIDDEN.has(name)) return undefined;
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return {
      store,
      advance: (ms) => clock.advance(ms),
      rewind: (ms) => clock.set(clock.now() - ms),
      teardown: () => inner.close(),
    };
  },
  { leases: false, access: false },
);
