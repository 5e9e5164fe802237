// "Outcome-based counting" in packages/koa/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import Koa from 'koa';
import { rateLimit } from '@portcullis/koa';

const app = new Koa();
app.use(
  rateLimit({
    name: 'search',
    limit: 3,
    windowMs: 60_000,
    skipFailedRequests: true, // count only the searches that found something
    requestWasSuccessful: (_req, res) => res.status === 200, // ctx.request, ctx.response
  }),
);
app.use((ctx) => {
  if (ctx.query.q === 'portcullis') ctx.body = { hits: 1 };
  else ctx.status = 204; // nothing found: given back
});

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}`;

const seen = [];
for (const q of ['nothing', 'nothing', 'portcullis', 'portcullis', 'nothing', 'portcullis', 'x']) {
  const res = await fetch(`${url}/search?q=${q}`);
  seen.push(`${res.status} ${res.headers.get('ratelimit')}`);
}
console.log(seen.join('\n'));
assert.deepEqual(seen, [
  '204 "search";r=2;t=60', // counted up front, given back once the 204 went out
  '204 "search";r=2;t=60',
  '200 "search";r=2;t=60', // a success stays counted
  '200 "search";r=1;t=60',
  '204 "search";r=0;t=60',
  '200 "search";r=0;t=60',
  '429 "search";r=0;t=60', // refused (and a refusal is never counted)
]);

server.close();
// snippet:end
