// The Usage section of packages/fetch/README.md (the code between the markers is the README's).
// It is a Bun server; here Bun is played by an object with Bun's `server.requestIP`.
// snippet:start
import { createHash, timingSafeEqual } from 'node:crypto';
import { authGuard, decisionOf, rateLimit } from '@portcullis/fetch';

const digest = (value) => createHash('sha256').update(value).digest();
const matches = (given, secret) => timingSafeEqual(digest(given), digest(secret));
// Bun.serve passes its server beside the request: the peer's address is server.requestIP().
const clientAddress = (request, server) => server.requestIP(request)?.address;

const api = rateLimit({ limit: 100, windowMs: 60_000, clientAddress })((request) =>
  Response.json(decisionOf(request)),
);
const login = authGuard({
  scope: 'password',
  maxAttempts: 3,
  lockoutMs: 600_000,
  clientAddress,
  verify: (request) => {
    const header = request.headers.get('authorization');
    if (!header) return 'missing';
    return matches(header, 'Bearer s3cret') ? 'ok' : 'invalid';
  },
})(() => Response.json({ ok: true }));

const app = {
  fetch(request, server) {
    const { pathname } = new URL(request.url);
    return pathname === '/login' ? login(request, server) : api(request, server);
  },
};
export default app; // `bun run server.mjs` serves it (or Bun.serve(app))
// snippet:end

import assert from 'node:assert/strict';

const server = { requestIP: () => ({ address: '203.0.113.9', family: 'IPv4', port: 50_000 }) };
const attempt = (password) =>
  app.fetch(
    new Request('http://api.test/login', {
      method: 'POST',
      headers: { authorization: `Bearer ${password}` },
    }),
    server,
  );
const statuses = [];
for (const password of ['wrong', 'wrong', 'wrong']) statuses.push((await attempt(password)).status);
const locked = await attempt('s3cret');
console.log('login:', statuses.join(' '), locked.status, locked.headers.get('retry-after'));
assert.deepEqual(statuses, [401, 401, 401]);

const quota = await app.fetch(new Request('http://api.test/quota'), server);
const { key, remaining } = await quota.json();
console.log('quota:', key, remaining, quota.headers.get('ratelimit'));
assert.equal(remaining, 99);
