// The Usage section of packages/koa/README.md (the code between the markers is the README's).
// snippet:start
import { createHash, timingSafeEqual } from 'node:crypto';
import Koa from 'koa';
import { authGuard, rateLimit, webhookGuard } from '@portcullis/koa';

// Compare secrets in constant time (hashing first makes the lengths equal).
const digest = (value) => createHash('sha256').update(value).digest();
const matches = (given, secret) => timingSafeEqual(digest(given), digest(secret));

const app = new Koa();
app.use(rateLimit({ limit: 100, windowMs: 60_000, trustedProxies: ['10.0.0.0/8'] }));

const login = authGuard({
  scope: 'password',
  maxAttempts: 3, // the failure-limiter options sit beside verify (default 10 / 60 s / 5 min)
  lockoutMs: 600_000,
  trustedProxies: ['10.0.0.0/8'],
  verify: (req) => {
    const header = req.get('authorization'); // req is ctx.request
    if (!header) return 'missing';
    return matches(header, 'Bearer s3cret') ? 'ok' : 'invalid';
  },
});
const hook = webhookGuard({
  verify: (req) => {
    const token = req.get('x-hub-token');
    if (!token) return 'missing';
    return matches(token, 'hook-secret') ? 'ok' : 'invalid';
  },
});

app.use(async (ctx, _next) => {
  if (ctx.path === '/login')
    return login(ctx, async () => {
      ctx.body = { ok: true };
    });
  if (ctx.path === '/hooks/github')
    return hook(ctx, async () => {
      ctx.status = 204;
    });
  ctx.body = ctx.state.rateLimit; // the decision, for handlers
});

const server = app.listen(0, '127.0.0.1');
// snippet:end

import assert from 'node:assert/strict';
import { once } from 'node:events';

await once(server, 'listening');
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

const quota = await fetch(`${url}/quota`);
const { limit, remaining } = await quota.json();
console.log('quota:', limit, remaining, quota.headers.get('ratelimit'));
assert.equal(remaining, 94); // every request above counted once

server.close();
