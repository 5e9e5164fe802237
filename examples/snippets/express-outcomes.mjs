// "Outcome-based counting" in packages/express/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import express from 'express';
import { rateLimit } from '@portcullis/express';

const app = express();
app.post(
  '/login',
  // 3 failed logins per 15 minutes; successful ones are given back once answered.
  rateLimit({ name: 'login', limit: 3, windowMs: 900_000, skipSuccessfulRequests: true }),
  (req, res) => res.sendStatus(req.get('authorization') === 'Bearer s3cret' ? 200 : 401),
);

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}`;

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

server.close();
// snippet:end
