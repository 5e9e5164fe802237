import type {
  Counter,
  Histogram,
  Meter,
  MetricOptions,
  ObservableCounter,
  ObservableGauge,
} from '@opentelemetry/api';

/** Histogram bounds for one store round trip, in seconds: 0.25 ms to the longest timeouts. */
const STORE_SECONDS = [
  0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];

/** The instruments `instrument()` records to, one per metric. */
export interface Instruments {
  readonly decisions: ObservableCounter;
  readonly lockouts: Counter;
  readonly active: ObservableGauge;
  readonly storeErrors: Counter;
  readonly storeDuration: Histogram;
}

/** A metric's description and unit, as each instrument is created with. */
const about = (description: string, unit: string): MetricOptions => ({ description, unit });

/** Creates Portcullis's metric instruments on `meter`. */
export function createInstruments(meter: Meter): Instruments {
  return {
    // Asynchronous: counted here, reported when a reader collects. A synchronous counter's add()
    // cost about 900 ns per decision on the SDK (attributes hashed per call; bench/README.md).
    decisions: meter.createObservableCounter(
      'portcullis.decisions',
      about(
        'Decisions of Portcullis limiters (a window consume, a failure-limiter check)',
        '{decision}',
      ),
    ),
    lockouts: meter.createCounter(
      'portcullis.lockouts',
      about('Lockouts started by Portcullis failure limiters', '{lockout}'),
    ),
    active: meter.createObservableGauge(
      'portcullis.lockouts.active',
      about('Lockouts in force that this process started, per limiter', '{lockout}'),
    ),
    storeErrors: meter.createCounter(
      'portcullis.store.errors',
      about('Failed round trips to a shared store (error, malformed reply, timeout)', '{error}'),
    ),
    storeDuration: meter.createHistogram('portcullis.store.duration', {
      ...about('Round trips to a shared store, timeouts included', 's'),
      advice: { explicitBucketBoundaries: STORE_SECONDS },
    }),
  };
}
