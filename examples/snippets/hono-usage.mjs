// The Usage section of packages/hono/README.md (the code between the markers is the README's).
// snippet:start
import { createHash, timingSafeEqual } from 'node:crypto';
import { serve } from '@hono/node-server';
import { authGuard, rateLimit, webhookGuard } from '@portcullis/hono';
import { Hono } from 'hono';

// Compare secrets in constant time (hashing first makes the lengths equal).
const digest = (value) => createHash('sha256').update(value).digest();
const matches = (given, secret) => timingSafeEqual(digest(given), digest(secret));

const app = new Hono();
app.use('/api/*', rateLimit({ limit: 100, windowMs: 60_000 })); // 429 + RateLimit fields
app.post(
  '/login',
  authGuard({
    scope: 'password',
    maxAttempts: 3, // the failure-limiter options sit beside verify (default 10 / 60 s / 5 min)
    lockoutMs: 600_000,
    verify: (c) => {
      const header = c.req.header('authorization');
      if (!header) return 'missing';
      return matches(header, 'Bearer s3cret') ? 'ok' : 'invalid';
    },
  }),
  (c) => c.json({ ok: true }),
);
app.post(
  '/hooks/github',
  webhookGuard({
    verify: (c) => {
      const token = c.req.header('x-hub-token');
      if (!token) return 'missing';
      return matches(token, 'hook-secret') ? 'ok' : 'invalid';
    },
  }),
  (c) => c.body(null, 204),
);
app.get('/api/quota', (c) => c.json(c.get('rateLimit'))); // the decision, for handlers

// On @hono/node-server the client is the socket's peer; elsewhere pass clientAddress (below).
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
// snippet:end

import assert from 'node:assert/strict';

await new Promise((resolve) => server.once('listening', resolve));
const url = `http://127.0.0.1:${server.address().port}`;

// A request from this machine without an Origin header is direct-local: loopback is exempt from
// lockouts, so a local CLI never locks itself out. A browser page sends Origin: it is limited.
const attempt = (password) =>
  fetch(`${url}/login`, {
    method: 'POST',
    headers: { origin: 'http://example.test', authorization: `Bearer ${password}` },
  });
const statuses = [];
for (const password of ['wrong', 'wrong', 'wrong']) statuses.push((await attempt(password)).status);
const locked = await attempt('s3cret'); // the third failure started a 10-minute lockout
console.log('login:', statuses.join(' '), locked.status, locked.headers.get('retry-after'));
assert.deepEqual(statuses, [401, 401, 401]);
assert.equal(locked.status, 429); // the right password too, until the lockout ends

const res = await fetch(`${url}/hooks/github`, { method: 'POST', headers: { 'x-hub-token': 'x' } });
console.log('webhook:', res.status, await res.text());
assert.equal(res.status, 401);

const quota = await fetch(`${url}/api/quota`);
const { limit, remaining } = await quota.json();
console.log('quota:', limit, remaining, quota.headers.get('ratelimit'));
assert.equal(remaining, 99); // only /api is limited

server.close();
