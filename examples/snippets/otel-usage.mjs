// The first example of packages/otel/README.md (the code between the markers is the README's).
// snippet:start
import assert from 'node:assert/strict';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { createFailureLimiter, createWindowLimiter } from '@portcullis/core';
import { instrument } from '@portcullis/otel';

// Any reader works (PrometheusExporter, PeriodicExportingMetricReader + OTLP, …); this one is
// collected by hand. Without meterProvider, instrument() uses the global one.
class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}
const reader = new Reader();
const metrics = instrument({ meterProvider: new MeterProvider({ readers: [reader] }) });

const api = createWindowLimiter({ name: 'api', limit: 2, windowMs: 60_000 });
for (let i = 0; i < 3; i++) api.consume('203.0.113.7'); // allowed, allowed, limited
const auth = createFailureLimiter({ maxAttempts: 2 }); // named 'auth'
for (let i = 0; i < 3; i++)
  if (auth.check('198.51.100.4').allowed) auth.recordFailure('198.51.100.4');

const { resourceMetrics } = await reader.collect();
const lines = resourceMetrics.scopeMetrics[0].metrics.flatMap((m) =>
  m.dataPoints.map(
    (p) => `${m.descriptor.name} ${Object.values(p.attributes).join(' ')} = ${p.value}`,
  ),
);
console.log(lines.join('\n'));
assert.equal(lines.length, 6);
metrics.close(); // unsubscribes: limiters publish per decision only while someone listens
// snippet:end
