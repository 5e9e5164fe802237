// "Outcome-based counting" in packages/fastify/README.md.
// snippet:start
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import portcullis from '@portcullis/fastify';

const app = Fastify();
await app.register(portcullis, { global: false });
app.post(
  '/login',
  {
    // 3 failed logins per 15 minutes; successful ones are given back once answered.
    config: {
      rateLimit: { name: 'login', limit: 3, windowMs: 900_000, skipSuccessfulRequests: true },
    },
  },
  async (request, reply) =>
    reply.code(request.headers.authorization === 'Bearer s3cret' ? 200 : 401).send(),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });

const seen = [];
for (const password of ['s3cret', 's3cret', 'wrong', 'wrong', 'wrong', 's3cret']) {
  const res = await fetch(`${url}/login`, {
    method: 'POST',
    headers: { authorization: `Bearer ${password}` },
  });
  seen.push(`${res.status} ${res.headers.get('ratelimit')}`);
}
console.log(seen.join('\n'));
assert.deepEqual(seen, [
  '200 "login";r=2;t=900', // counted up front, refunded after the 200
  '200 "login";r=2;t=900',
  '401 "login";r=2;t=900', // failures stay counted
  '401 "login";r=1;t=900',
  '401 "login";r=0;t=900',
  '429 "login";r=0;t=900', // refused: the right password too, and a refusal is never counted
]);

await app.close();
// snippet:end
