// "Stacked limiters" in packages/koa/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import Koa from 'koa';
import { rateLimit } from '@portcullis/koa';

const app = new Koa();
app.use(rateLimit({ name: 'burst', limit: 2, windowMs: 10_000, headers: 'legacy' }));
app.use(rateLimit({ name: 'daily', limit: 1000, windowMs: 86_400_000, headers: 'legacy' }));
app.use((ctx) => {
  ctx.body = 'ok';
});

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}`;

const first = await fetch(url);
for (const name of ['ratelimit-policy', 'ratelimit', 'x-ratelimit-limit', 'x-ratelimit-remaining'])
  console.log(`${name}: ${first.headers.get(name)}`);
assert.equal(first.headers.get('ratelimit-policy'), '"burst";q=2;w=10, "daily";q=1000;w=86400');
assert.equal(first.headers.get('ratelimit'), '"burst";r=1;t=10, "daily";r=999;t=86400');
assert.equal(first.headers.get('x-ratelimit-remaining'), '1'); // the most restrictive: burst

await fetch(url);
const third = await fetch(url); // burst refuses; daily is not consulted
console.log(third.status, third.headers.get('ratelimit'), third.headers.get('retry-after'));
assert.equal(third.status, 429);

server.close();
// snippet:end
