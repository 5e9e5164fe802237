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

// A custom store may leave the optional leases out: the suite then checks it has neither method.
describeStoreConformance(
  'a store without leases (MemoryStore with acquire and release hidden)',
  () => {
    const clock = manualClock(1_000_000);
    const inner = new MemoryStore({ clock, timers: clock });
    const store = new Proxy(inner, {
      get(target, name) {
        if (name === 'acquire' || name === 'release') return undefined;
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
  { leases: false },
);
