// "The hook option" in packages/fastify/README.md.
// snippet:start
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import portcullis from '@portcullis/fastify';

const users = { 'key-alice': { id: 'alice' }, 'key-bob': { id: 'bob' } };
const authenticate = async (request) => {
  request.user = users[request.headers['x-api-key']]; // your authentication (e.g. a JWT check)
};

const app = Fastify();
app.decorateRequest('user', null);
await app.register(portcullis, {
  hook: 'preHandler', // after the route's onRequest authentication: key by the user
  limit: 2,
  windowMs: 60_000,
  key: (request, ip) => request.user?.id ?? ip,
});
app.get('/me', { onRequest: authenticate }, async (request) => request.user);
app.get(
  '/public',
  { config: { rateLimit: { hook: 'onRequest', name: 'public', limit: 1 } } }, // refuse early
  async () => 'ok',
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });

const me = async (apiKey) => {
  const res = await fetch(`${url}/me`, { headers: { 'x-api-key': apiKey } });
  return `${apiKey}: ${res.status} ${res.headers.get('ratelimit')}`;
};
const seen = [
  await me('key-alice'),
  await me('key-alice'),
  await me('key-alice'),
  await me('key-bob'),
];
seen.push(
  `public: ${(await fetch(`${url}/public`)).status} ${(await fetch(`${url}/public`)).status}`,
);
console.log(seen.join('\n'));
assert.deepEqual(seen, [
  'key-alice: 200 "default";r=1;t=60',
  'key-alice: 200 "default";r=0;t=60',
  'key-alice: 429 "default";r=0;t=60',
  'key-bob: 200 "default";r=1;t=60', // a bucket per user, not per address
  'public: 200 429',
]);
await app.close();

// Only the four request hooks are accepted.
const bad = Fastify().register(portcullis, { hook: 'onSend' });
await assert.rejects(bad.ready(), (error) => {
  console.log(`${error.code}: ${error.message}`);
  return error.code === 'ERR_PORTCULLIS_HOOK';
});
// snippet:end
