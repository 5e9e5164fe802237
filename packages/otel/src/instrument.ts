import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type Attributes,
  type MeterProvider,
  metrics,
  type ObservableResult,
} from '@opentelemetry/api';
import {
  type Clock,
  channels,
  type DecisionReason,
  type PortcullisEvent,
  type StoreCallEvent,
  systemClock,
} from '@portcullis/core';
import { integerOption, methodsOption, parseOptions } from '@portcullis/core/adapter';
import { ActiveLockouts } from './active-lockouts.js';

/** Options of {@link instrument}. */
export interface InstrumentOptions {
  /** Where the instruments are created. @default the global provider of `@opentelemetry/api` */
  meterProvider?: MeterProvider;
  /**
   * Tells when a lockout seen starting has ended (for `portcullis.lockouts.active`): give the
   * limiters' clock when they run on one of their own. @default systemClock
   */
  clock?: Clock;
  /**
   * Most lockouts in force remembered per limiter for the gauge; past it the soonest to end is
   * forgotten (the gauge under-counts rather than grow). @default 10_000
   */
  maxActiveLockouts?: number;
}

/** What {@link instrument} returns. */
export interface Instrumentation {
  /**
   * Stops recording: unsubscribes from every channel and removes the observable callbacks (an
   * SDK keeps exporting the last values it collected). Idempotent.
   */
  close(): void;
}

/** The failure-limiter layers a lockout may name (docs/design.md#defence-in-depth). */
const LAYERS = new Set(['client', 'pair', 'account', 'scope', 'spray', 'ban']);

/** Each decision reason's place in a limiter's row of counts (anything else is not recorded). */
const REASON_INDEX = new Map<unknown, number>(
  (['allowed', 'exempt', 'limited', 'locked', 'overflow', 'fallback', 'store-error'] as const).map(
    (reason: DecisionReason, i) => [reason, i],
  ),
);

/** One series of `portcullis.decisions`: its attributes and its count since `instrument()`. */
interface Count {
  readonly attributes: Attributes;
  value: number;
}

/** Histogram bounds for one store round trip, in seconds: 0.25 ms to the longest timeouts. */
const STORE_SECONDS = [
  0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];

const spec = {
  meterProvider: methodsOption<MeterProvider>('getMeter'),
  clock: methodsOption<Clock>('now'),
  maxActiveLockouts: integerOption(1),
};

/** A limiter name as an attribute value: configuration, but never trusted to be a string. */
const nameOf = (value: unknown): string => (typeof value === 'string' ? value : 'unknown');

/** Bounded `error.type` values of a failed store call. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ERR_PORTCULLIS_REDIS_TIMEOUT') return 'timeout';
  if (code === 'ERR_PORTCULLIS_REDIS_REPLY') return 'invalid_reply';
  return 'error';
}

/** The subject of a lockout or reset event, as one string (held in memory, never an attribute). */
function subjectOf(event: PortcullisEvent): string {
  return `${String(event.scope ?? 'default')}\u0000${String(event.decision?.key)}`;
}

/**
 * Records Portcullis's metrics with OpenTelemetry: subscribes to the diagnostics channels every
 * limiter and `RedisStore` publish on (only while subscribed do they publish per decision) and
 * records `portcullis.decisions`, `portcullis.lockouts`, `portcullis.lockouts.active`,
 * `portcullis.store.errors` and `portcullis.store.duration`. No attribute holds a key, an address,
 * an origin or an account: only limiter names (configuration), reasons, layers and store kinds.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function instrument(options?: InstrumentOptions): Instrumentation {
  const o = parseOptions(options, spec, 'instrument');
  const provider = o.meterProvider ?? metrics.getMeterProvider();
  const clock = o.clock ?? systemClock;
  const meter = provider.getMeter('@portcullis/otel');

  // Asynchronous: counted here, reported when a reader collects. A synchronous counter's add()
  // cost about 900 ns per decision on the SDK (attributes hashed per call; bench/README.md).
  const decisions = meter.createObservableCounter('portcullis.decisions', {
    description: 'Decisions of Portcullis limiters (a window consume, a failure-limiter check)',
    unit: '{decision}',
  });
  const lockouts = meter.createCounter('portcullis.lockouts', {
    description: 'Lockouts started by Portcullis failure limiters',
    unit: '{lockout}',
  });
  const active = meter.createObservableGauge('portcullis.lockouts.active', {
    description: 'Lockouts in force that this process started, per limiter',
    unit: '{lockout}',
  });
  const storeErrors = meter.createCounter('portcullis.store.errors', {
    description: 'Failed round trips to a shared store (error, malformed reply, timeout)',
    unit: '{error}',
  });
  const storeDuration = meter.createHistogram('portcullis.store.duration', {
    description: 'Round trips to a shared store, timeouts included',
    unit: 's',
    advice: { explicitBucketBoundaries: STORE_SECONDS },
  });

  // Per limiter, one count per reason and dry-run flag: nothing allocated per decision.
  const counts = new Map<string, (Count | undefined)[]>();

  const inForce = new ActiveLockouts(o.maxActiveLockouts ?? 10_000);

  function onDecision(message: unknown): void {
    const { limiter, decision } = message as PortcullisEvent;
    // A reason from no Portcullis release (another publisher on the channel) is not recorded.
    const reason = REASON_INDEX.get(decision?.reason);
    if (reason === undefined) return;
    const name = nameOf(limiter);
    let row = counts.get(name);
    if (row === undefined) {
      row = [];
      counts.set(name, row);
    }
    const dryRun = decision.dryRun === true;
    const index = reason * 2 + (dryRun ? 1 : 0);
    const count = row[index];
    if (count !== undefined) {
      count.value++;
      return;
    }
    row[index] = {
      attributes: Object.freeze({
        'portcullis.limiter': name,
        'portcullis.outcome': decision.reason,
        'portcullis.dry_run': dryRun,
      }),
      value: 1,
    };
  }

  function onLockout(message: unknown): void {
    const event = message as PortcullisEvent & { layer?: unknown };
    const limiter = nameOf(event.limiter);
    const layer =
      typeof event.layer === 'string' && LAYERS.has(event.layer) ? event.layer : 'client';
    lockouts.add(1, { 'portcullis.limiter': limiter, 'portcullis.layer': layer });
    const d = event.decision;
    const left = Math.max(Number(d?.resetMs) || 0, Number(d?.retryAfterMs) || 0);
    const now = clock.now();
    inForce.add(limiter, subjectOf(event), now + left, now);
  }

  function onReset(message: unknown): void {
    const event = message as PortcullisEvent;
    inForce.remove(nameOf(event.limiter), subjectOf(event));
  }

  function onStoreCall(message: unknown): void {
    const event = message as StoreCallEvent;
    const store = nameOf(event.store);
    const seconds = Math.max(0, Number(event.durationMs) || 0) / 1000;
    if (event.failed) {
      const type = errorType(event.error);
      storeErrors.add(1, { 'portcullis.store': store, 'error.type': type });
      storeDuration.record(seconds, { 'portcullis.store': store, 'error.type': type });
    } else {
      storeDuration.record(seconds, { 'portcullis.store': store });
    }
  }

  function observeDecisions(result: ObservableResult): void {
    for (const row of counts.values())
      for (const count of row)
        if (count !== undefined) result.observe(count.value, count.attributes);
  }

  function observeActive(result: ObservableResult): void {
    inForce.forEach(clock.now(), (count, limiter) =>
      result.observe(count, { 'portcullis.limiter': limiter }),
    );
  }

  const subscriptions: [string, (message: unknown) => void][] = [
    [channels.decision.name as string, onDecision],
    [channels.lockout.name as string, onLockout],
    [channels.reset.name as string, onReset],
    [channels.storeCall.name as string, onStoreCall],
  ];
  for (const [name, fn] of subscriptions) subscribe(name, fn);
  decisions.addCallback(observeDecisions);
  active.addCallback(observeActive);

  let closed = false;
  return {
    close(): void {
      if (closed) return;
      closed = true;
      for (const [name, fn] of subscriptions) unsubscribe(name, fn);
      decisions.removeCallback(observeDecisions);
      active.removeCallback(observeActive);
    },
  };
}
