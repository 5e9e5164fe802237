// "Live reconfiguration" in packages/fetch/README.md (the handlers are called directly, as a
// runtime would, with the peer's address beside the request).
// snippet:start
import assert from 'node:assert/strict';
import { authGuard, rateLimit } from '@portcullis/fetch';

const clientAddress = (_request, info) => info.remoteAddr.hostname; // Deno.serve's info
const limitApi = rateLimit({ name: 'api', limit: 5, windowMs: 60_000, clientAddress });
const guardLogin = authGuard({
  maxAttempts: 5,
  lockoutMs: 60_000,
  clientAddress,
  verify: (request) => (request.headers.get('x-password') === 's3cret' ? 'ok' : 'invalid'),
});
const api = limitApi(() => new Response('ok'));
const login = guardLogin(() => new Response('ok'));

const info = { remoteAddr: { transport: 'tcp', hostname: '203.0.113.7', port: 50_000 } };
const get = () => api(new Request('http://app.test/api'), info);
const attempt = (password) =>
  login(
    new Request('http://app.test/login', { method: 'POST', headers: { 'x-password': password } }),
    info,
  );

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

assert.equal((await attempt('wrong')).status, 401);
assert.equal((await attempt('wrong')).status, 401);
guardLogin.reconfigure({ maxAttempts: 2 }); // tightened: a client at 2 failures is locked out at once
const locked = await attempt('s3cret');
console.log(
  locked.status,
  locked.headers.get('retry-after'),
  guardLogin.limiter.config.maxAttempts,
);
assert.equal(locked.status, 429);
// snippet:end
