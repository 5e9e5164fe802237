// "Per-request limits and keys" in packages/fastify/README.md.
// snippet:start
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import portcullis from '@portcullis/fastify';

const users = { 'key-alice': { id: 'alice', plan: 'free' }, 'key-bob': { id: 'bob', plan: 'pro' } };

const app = Fastify();
app.decorateRequest('user', null);
app.addHook('onRequest', async (request) => {
  request.user = users[request.headers['x-api-key']]; // your authentication
});
await app.register(portcullis, {
  name: 'plan',
  limit: (request) => (request.user?.plan === 'pro' ? 5 : 2), // may also be async
  windowMs: 60_000,
  key: (request, ip) => request.user?.id ?? ip, // ip: the default key (IPv6 by its /64)
});
app.get('/', async () => 'ok');
const url = await app.listen({ port: 0, host: '127.0.0.1' });

async function get(apiKey) {
  const res = await fetch(url, { headers: apiKey ? { 'x-api-key': apiKey } : {} });
  const line = `${apiKey ?? 'anonymous'}: ${res.status} ${res.headers.get('ratelimit-policy')} ${res.headers.get('ratelimit')}`;
  console.log(line);
  return line;
}

assert.equal(await get('key-alice'), 'key-alice: 200 "plan";q=2;w=60 "plan";r=1;t=60');
assert.equal(await get('key-alice'), 'key-alice: 200 "plan";q=2;w=60 "plan";r=0;t=60');
assert.equal(await get('key-alice'), 'key-alice: 429 "plan";q=2;w=60 "plan";r=0;t=60');
assert.equal(await get('key-bob'), 'key-bob: 200 "plan";q=5;w=60 "plan";r=4;t=60');
assert.equal(await get(), 'anonymous: 200 "plan";q=2;w=60 "plan";r=1;t=60'); // keyed by IP

users['key-alice'].plan = 'pro'; // an upgrade applies at once: (5, 60 s) is a policy of its own
assert.equal(await get('key-alice'), 'key-alice: 200 "plan";q=5;w=60 "plan";r=4;t=60');

await app.close();
// snippet:end
