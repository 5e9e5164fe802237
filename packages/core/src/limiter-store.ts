import type { Clock, Timers } from './clock.js';
import { PortcullisConfigError } from './errors.js';
import { MemoryStore } from './memory-store.js';
import type { Store } from './store.js';

/** The store a limiter works on, and how its keys are spelled there. */
export interface LimiterStore {
  readonly store: Store;
  /** True when the limiter built the store itself (and so closes it). */
  readonly own: boolean;
  /** `''` for a private store; `<name>:` for a shared one, so two limiters never collide. */
  readonly namespace: string;
}

/**
 * The store of a limiter: the one given, or a private `MemoryStore` built from `maxEntries`,
 * `clock` and `timers`. `maxEntries` with a given store is an error: it would be silently ignored.
 */
export function limiterStore(
  o: { store?: Store; maxEntries?: number; clock?: Clock; timers?: Timers },
  name: string,
  where: string,
): LimiterStore {
  if (o.store !== undefined) {
    if (o.maxEntries !== undefined) {
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_MAX_ENTRIES',
        'maxEntries',
        `${where}: maxEntries sizes the built-in store; set it on the store you pass instead`,
      );
    }
    return { store: o.store, own: false, namespace: `${name}:` };
  }
  const store = new MemoryStore({
    ...(o.maxEntries !== undefined && { maxEntries: o.maxEntries }),
    ...(o.clock !== undefined && { clock: o.clock }),
    ...(o.timers !== undefined && { timers: o.timers }),
  });
  return { store, own: true, namespace: '' };
}
