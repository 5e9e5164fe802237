// "Per-request limits and keys" in packages/koa/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import Koa from 'koa';
import { rateLimit } from '@portcullis/koa';

const users = { 'key-alice': { id: 'alice', plan: 'free' }, 'key-bob': { id: 'bob', plan: 'pro' } };

const app = new Koa();
app.use((ctx, next) => {
  ctx.state.user = users[ctx.get('x-api-key')]; // your authentication
  return next();
});
app.use(
  rateLimit({
    name: 'plan',
    // req is ctx.request; the context is req.ctx
    limit: (req) => (req.ctx.state.user?.plan === 'pro' ? 5 : 2), // may also be async
    windowMs: 60_000,
    key: (req, ip) => req.ctx.state.user?.id ?? ip, // ip: the default key (IPv6 by its /64)
  }),
);
app.use((ctx) => {
  ctx.body = 'ok';
});

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}`;

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

server.close();
// snippet:end
