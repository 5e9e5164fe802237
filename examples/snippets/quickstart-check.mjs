// What every adapter's opening example (<package>-quickstart.mjs) is checked to do: refuse ten
// wrong passwords from a browser page with 401, then lock it out (429, Retry-After 300) even with
// the right one, and count requests against the general limit.
import assert from 'node:assert/strict';
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value) => createHash('sha256').update(value).digest();

/** The password check the examples leave to you: constant time (hashing evens the lengths). */
export const checkPassword = (header) => timingSafeEqual(digest(header), digest('Bearer s3cret'));

/**
 * Ten wrong logins and a right one against `url` (or through `send`, a fetch-like function),
 * from a page of another site (an Origin header: a browser is never exempt, even from loopback).
 * @param {string} url
 * @param {(request: Request) => Promise<Response>} [send]
 */
export async function tryLogins(url, send = fetch) {
  const login = (password) =>
    send(
      new Request(`${url}/login`, {
        method: 'POST',
        headers: { origin: 'http://example.test', authorization: `Bearer ${password}` },
      }),
    );
  const statuses = [];
  for (let i = 0; i < 10; i++) statuses.push((await login('wrong')).status);
  const locked = await login('s3cret');
  console.log('login:', statuses.join(' '), locked.status, locked.headers.get('retry-after'));
  assert.deepEqual(statuses, Array(10).fill(401));
  assert.equal(locked.status, 429);
  const other = await send(new Request(`${url}/other`));
  console.log('other:', other.headers.get('ratelimit'));
}

// The opening examples of packages/rpc and packages/otel leave two things to you as well: your
// dispatcher's handlers and connection object (rpc), and the reader or exporter of your
// OpenTelemetry setup (otel). These stand in for them.

/** A connection as your transport keeps it. */
export const conn = { deviceId: 'laptop', ip: '203.0.113.7' };

/** Your RPC handlers. */
export const handlers = {
  'config.patch': (params) => ({ patched: Object.keys(params ?? {}) }),
  'config.get': () => ({ theme: 'dark' }),
};

import { MetricReader } from '@opentelemetry/sdk-metrics';

/** A metric reader collected by hand (yours is a PrometheusExporter, an OTLP exporter, …). */
class HandReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}
export const reader = new HandReader();
