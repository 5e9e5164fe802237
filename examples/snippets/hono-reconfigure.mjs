// "Live reconfiguration" in packages/hono/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { serve } from '@hono/node-server';
import { authGuard, rateLimit } from '@portcullis/hono';
import { Hono } from 'hono';

const limitApi = rateLimit({ name: 'api', limit: 5, windowMs: 60_000 });
const guardLogin = authGuard({
  maxAttempts: 5,
  lockoutMs: 60_000,
  exemptLoopback: false,
  verify: (c) => (c.req.header('x-password') === 's3cret' ? 'ok' : 'invalid'),
});
const app = new Hono();
app.get('/api', limitApi, (c) => c.text('ok'));
app.post('/login', guardLogin, (c) => c.text('ok'));

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise((resolve) => server.once('listening', resolve));
const url = `http://127.0.0.1:${server.address().port}`;
const get = () => fetch(`${url}/api`);
const login = (password) =>
  fetch(`${url}/login`, { method: 'POST', headers: { 'x-password': password } });

const before = await get();
console.log(before.status, before.headers.get('ratelimit-policy'), before.headers.get('ratelimit'));
assert.equal(before.headers.get('ratelimit'), '"api";r=4;t=60');

limitApi.reconfigure({ limit: 2 }); // counts are kept: 1 of the new 2 is spent
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

server.close();
// snippet:end
