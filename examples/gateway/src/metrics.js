// GET /metrics: the Portcullis metrics of @portcullis/otel (decisions, lockouts, lockouts in force,
// store errors and latency) in the Prometheus text format. OpenTelemetry's Prometheus exporter is
// the reader of a meter provider of the gateway's own, without a server of its own: http.js serves
// the scrape on the gateway's port, under the same access rule as /status. The diagnostics channels
// are process-wide, so this records every Portcullis limiter of the process (one gateway per
// process outside the tests).
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { instrument } from '@portcullis/otel';

/** @import { Clock } from '@portcullis/core' */
/** @import { KnownLimiter } from '@portcullis/otel' */

/** The media type of the Prometheus text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * @param {{ clock: Clock, limiters?: readonly KnownLimiter[] }} options `clock` tells when a
 *   lockout seen starting ends (the limiters'); `limiters` are exported at zero from the start
 */
export function createMetrics({ clock, limiters = [] }) {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const instrumentation = instrument({ meterProvider: provider, clock, limiters });
  // No prefix, no timestamps, no resource labels; `target_info` kept, scope labels left out (one
  // scope: @portcullis/otel), so the series read `portcullis_decisions_total{portcullis_limiter=…}`.
  const serializer = new PrometheusSerializer('', false, undefined, false, true);
  return {
    /** The exposition text of a scrape now. */
    async scrape() {
      const { resourceMetrics } = await exporter.collect();
      return serializer.serialize(resourceMetrics);
    },
    /** Stops recording and shuts the provider down. */
    async close() {
      instrumentation.close();
      await provider.shutdown();
    },
  };
}

/** @typedef {ReturnType<typeof createMetrics>} Metrics */
