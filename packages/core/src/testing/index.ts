/**
 * @portcullis/core/testing — a manual clock for deterministic tests and the store conformance
 * suite every store must pass. Imports `vitest`; use it from tests only.
 * @packageDocumentation
 */
export { type ManualClock, manualClock } from './manual-clock.js';
export {
  type ConformanceOptions,
  describeStoreConformance,
  type StoreHarness,
} from './store-conformance.js';
