// "Cost after the response" in packages/express/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import express from 'express';
import { rateLimit } from '@portcullis/express';

const app = express();
// 1 000 tokens a minute per client; a call costs 1 up front and its tokens once it has answered.
const tokens = rateLimit({
  name: 'tokens',
  limit: 1000,
  windowMs: 60_000,
  chargeAfter: (_req, res) => res.locals.tokensUsed ?? 0,
});
app.post('/complete', tokens, (_req, res) => {
  res.locals.tokensUsed = 600; // what the model generated, known only now
  res.json({ text: '…' });
});

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}/complete`;
const call = async () => {
  const res = await fetch(url, { method: 'POST' });
  return `${res.status} ${res.headers.get('ratelimit')}`;
};

const seen = [await call(), await call(), await call()];
console.log(seen.join('\n'));
// 999 left before the first; 1 + 600 spent, so 398 before the second, whose 600 empty the budget.
assert.deepEqual(seen, [
  '200 "tokens";r=999;t=60',
  '200 "tokens";r=398;t=60',
  '429 "tokens";r=0;t=60',
]);

server.close();
// snippet:end
