import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type MeterProvider, metrics, type ObservableResult } from '@opentelemetry/api';
import {
  type Clock,
  channels,
  type PortcullisEvent,
  type StoreCallEvent,
  systemClock,
} from '@portcullis/core';
import { integerOption, methodsOption, parseOptions } from '@portcullis/core/adapter';
import { ActiveLockouts } from './active-lockouts.js';
import { decisionCounts } from './decision-counts.js';
import { errorType, layerOf, nameOf, subjectOf } from './event-attributes.js';
import { createInstruments } from './instruments.js';
import { type KnownLimiter, knownSeries } from './known-limiters.js';

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
  /**
   * Limiters whose series are exported from the first scrape, at zero, as Prometheus users
   * expect (an alert on `increase(…{portcullis_outcome="locked"}[5m])` needs the series to exist):
   * `portcullis.decisions` for `allowed` and `locked` (a failure limiter) or `limited` (a window
   * limiter), and, for a failure limiter, `portcullis.lockouts` of its client layer and
   * `portcullis.lockouts.active`. Other limiters' series appear with their first decision.
   * @default []
   */
  limiters?: readonly KnownLimiter[];
}

/** What {@link instrument} returns. */
export interface Instrumentation {
  /**
   * Stops recording: unsubscribes from every channel and removes the observable callbacks (an
   * SDK keeps exporting the last values it collected). Idempotent.
   */
  close(): void;
}

const spec = {
  meterProvider: methodsOption<MeterProvider>('getMeter'),
  clock: methodsOption<Clock>('now'),
  maxActiveLockouts: integerOption(1),
  limiters: knownSeries,
};

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

  const { decisions, lockouts, active, storeErrors, storeDuration } = createInstruments(meter);
  const { onDecision, observeDecisions, declare: declareDecisions } = decisionCounts();
  const inForce = new ActiveLockouts(o.maxActiveLockouts ?? 10_000);
  for (const known of o.limiters ?? []) {
    for (const outcome of known.outcomes) declareDecisions(known.name, outcome);
    if (!known.locks) continue;
    lockouts.add(0, { 'portcullis.limiter': known.name, 'portcullis.layer': 'client' });
    inForce.declare(known.name);
  }

  function onLockout(message: unknown): void {
    const event = message as PortcullisEvent & { layer?: unknown };
    const limiter = nameOf(event.limiter);
    lockouts.add(1, { 'portcullis.limiter': limiter, 'portcullis.layer': layerOf(event.layer) });
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
