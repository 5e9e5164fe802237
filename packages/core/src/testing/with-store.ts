import type { Store } from '../store.js';

/**
 * How each part of the conformance suite gets a fresh store: `body` runs against it with the
 * harness's clock controls (`advance` and `rewind` by `ms`), and the store is torn down after.
 * @internal the parts' shared signature (store-conformance.ts builds it)
 */
export type WithStore = (
  body: (
    s: Store,
    advance: (ms: number) => Promise<void>,
    rewind: (ms: number) => Promise<void>,
  ) => Promise<void>,
) => Promise<void>;
