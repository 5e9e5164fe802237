/**
 * @portcullis/otel — OpenTelemetry metrics for Portcullis, recorded from its diagnostics channels.
 * @packageDocumentation
 */
export { type Instrumentation, type InstrumentOptions, instrument } from './instrument.js';
export type { KnownLimiter } from './known-limiters.js';
