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
