// "Misconfiguration warnings" in packages/core/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { createWindowLimiter, MemoryStore, resolveClient } from '@portcullis/core';
import { createRequestGate } from '@portcullis/core/adapter';

const codes = [];
const logger = {
  warn: (fields, message) => {
    codes.push(fields.code);
    console.log(`${fields.code}: ${message}`);
  },
  error: console.error,
};

// A reverse proxy that is not in trustedProxies: every user behind it would share its bucket.
const viaProxy = {
  socket: { remoteAddress: '10.0.0.2' },
  headers: { 'x-forwarded-for': '198.51.100.7' },
};
assert.equal(resolveClient(viaProxy, { logger }).ip, '10.0.0.2');
assert.equal(resolveClient(viaProxy, { logger, trustedProxies: ['10.0.0.2'] }).ip, '198.51.100.7');

// Two limiters of one name on one shared store, with different numbers.
const store = new MemoryStore();
createWindowLimiter({ name: 'api', limit: 100, store, logger });
createWindowLimiter({ name: 'api', limit: 10, store, logger });

// Two rateLimit middlewares of one name on one request: it is counted twice under one policy.
// (createRequestGate is what every adapter's rateLimit builds; adapters get it from
// @portcullis/core/adapter. In an app, this is two app.use(rateLimit(…)) of one name.)
const first = createRequestGate({ limit: 100, logger });
const second = createRequestGate({ limit: 1000, logger });
const request = { socket: { remoteAddress: '203.0.113.7' }, headers: {} };
first.run(request, request);
second.run(request, request);

// A warning you have decided to live with is switched off by its code, one by one.
resolveClient(viaProxy, { logger, warnings: { PORTCULLIS_UNTRUSTED_FORWARDED: false } });

assert.deepEqual(codes, [
  'PORTCULLIS_UNTRUSTED_FORWARDED',
  'PORTCULLIS_NAME_CLASH',
  'PORTCULLIS_DUPLICATE_POLICY',
]);
// snippet:end
