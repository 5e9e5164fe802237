// The opening example of packages/otel/README.md (the code between the markers is the README's);
// below them, what the snippet test checks it does.
// snippet:start
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createWindowLimiter } from '@portcullis/core';
import { instrument } from '@portcullis/otel';

// Your OpenTelemetry setup: a meter provider with the reader or exporter you use.
const meterProvider = new MeterProvider({ readers: [reader] });
// From here on every Portcullis limiter in this process is recorded, with bounded attributes.
const instrumentation = instrument({ meterProvider });

const api = createWindowLimiter({ name: 'api', limit: 100, windowMs: 60_000 });
api.consume('203.0.113.7'); // portcullis.decisions{limiter=api, outcome=allowed} + 1
// snippet:end

import { reader } from './quickstart-check.mjs';

const { resourceMetrics } = await reader.collect();
for (const m of resourceMetrics.scopeMetrics[0].metrics)
  for (const p of m.dataPoints)
    console.log(`${m.descriptor.name} ${JSON.stringify(p.attributes)} = ${p.value}`);
instrumentation.close();
