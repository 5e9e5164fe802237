// The Usage section of packages/fastify/README.md (the code between the markers is the README's).
// snippet:start
import { createHash, timingSafeEqual } from 'node:crypto';
import Fastify from 'fastify';
import portcullis, { authGuard, webhookGuard } from '@portcullis/fastify';

// Compare secrets in constant time (hashing first makes the lengths equal).
const digest = (value) => createHash('sha256').update(value).digest();
const matches = (given, secret) => timingSafeEqual(digest(given), digest(secret));

const app = Fastify();
await app.register(portcullis, { limit: 100, windowMs: 60_000, trustedProxies: ['10.0.0.0/8'] });

app.get('/search', { config: { rateLimit: { limit: 2, name: 'search' } } }, async () => []); // its own budget
app.get('/health', { config: { rateLimit: false } }, async () => 'ok'); // not limited
app.get('/quota', async (request) => request.rateLimit); // the decision

app.post(
  '/login',
  {
    config: { rateLimit: false },
    onRequest: authGuard({
      scope: 'password',
      maxAttempts: 3, // the failure-limiter options sit beside verify (default 10 / 60 s / 5 min)
      lockoutMs: 600_000,
      trustedProxies: ['10.0.0.0/8'],
      verify: (request) => {
        const header = request.headers.authorization;
        if (!header) return 'missing';
        return matches(header, 'Bearer s3cret') ? 'ok' : 'invalid';
      },
    }),
  },
  async () => ({ ok: true }),
);

app.post(
  '/hooks/github',
  {
    onRequest: webhookGuard({
      verify: (request) => {
        const token = request.headers['x-hub-token'];
        if (!token) return 'missing';
        return matches(token, 'hook-secret') ? 'ok' : 'invalid';
      },
    }),
  },
  async (_request, reply) => reply.code(204).send(),
);

const url = await app.listen({ port: 0, host: '127.0.0.1' });
// snippet:end

import assert from 'node:assert/strict';

// A request from this machine without an Origin header is direct-local: loopback is exempt from
// lockouts, so a local CLI never locks itself out. A browser page sends Origin: it is limited.
const login = (password) =>
  fetch(`${url}/login`, {
    method: 'POST',
    headers: { origin: 'http://example.test', authorization: `Bearer ${password}` },
  });
const statuses = [];
for (const password of ['wrong', 'wrong', 'wrong']) statuses.push((await login(password)).status);
const locked = await login('s3cret'); // the third failure started a 10-minute lockout
console.log('login:', statuses.join(' '), locked.status, locked.headers.get('retry-after'));
assert.deepEqual(statuses, [401, 401, 401]);
assert.equal(locked.status, 429); // the right password too, until the lockout ends

const hook = await fetch(`${url}/hooks/github`, {
  method: 'POST',
  headers: { 'x-hub-token': 'x' },
});
console.log('webhook:', hook.status, await hook.text());
assert.equal(hook.status, 401);

const searches = [];
for (let i = 0; i < 3; i++) searches.push((await fetch(`${url}/search`)).status);
const health = await fetch(`${url}/health`);
console.log(
  'search:',
  searches.join(' '),
  'health:',
  health.status,
  health.headers.get('ratelimit'),
);
assert.deepEqual(searches, [200, 200, 429]);

const quota = await fetch(`${url}/quota`);
const { limit, remaining } = await quota.json();
console.log('quota:', limit, remaining, quota.headers.get('ratelimit'));
assert.equal(remaining, 98); // the global budget: only /hooks/github and this request

await app.close();
