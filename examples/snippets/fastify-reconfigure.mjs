// "Live reconfiguration" in packages/fastify/README.md.
// snippet:start
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { createWindowLimiter } from '@portcullis/core';
import portcullis, { authGuard } from '@portcullis/fastify';

// The plugin's global limit has no handle: give it a limiter and reconfigure that.
const api = createWindowLimiter({ name: 'api', limit: 5, windowMs: 60_000 });
// A hook carries its own reconfigure and limiter.
const guardLogin = authGuard({
  maxAttempts: 5,
  lockoutMs: 60_000,
  exemptLoopback: false,
  verify: (request) => (request.headers['x-password'] === 's3cret' ? 'ok' : 'invalid'),
});

const app = Fastify();
await app.register(portcullis, { limiter: api });
app.get('/api', async () => 'ok');
app.post('/login', { config: { rateLimit: false }, onRequest: guardLogin }, async () => 'welcome');
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const get = () => fetch(`${url}/api`);
const login = (password) =>
  fetch(`${url}/login`, { method: 'POST', headers: { 'x-password': password } });

const before = await get();
console.log(before.status, before.headers.get('ratelimit-policy'), before.headers.get('ratelimit'));
assert.equal(before.headers.get('ratelimit'), '"api";r=4;t=60');

api.reconfigure({ limit: 2 }); // counts are kept: 1 of the new 2 is spent
const after = [await get(), await get()];
console.log(after.map((res) => `${res.status} ${res.headers.get('ratelimit-policy')}`).join(', '));
assert.deepEqual(
  after.map((res) => res.status),
  [200, 429],
);

assert.equal((await login('wrong')).status, 401);
assert.equal((await login('wrong')).status, 401);
guardLogin.reconfigure({ maxAttempts: 2 }); // tightened: a client at 2 failures is locked out at once
const locked = await login('s3cret');
console.log(
  locked.status,
  locked.headers.get('retry-after'),
  guardLogin.limiter.config.maxAttempts,
);
assert.equal(locked.status, 429);

await app.close();
// snippet:end
