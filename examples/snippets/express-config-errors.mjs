// "Configuration errors" in packages/express/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import express from 'express';
import { createFailureLimiter } from '@portcullis/core';
import { authGuard, rateLimit } from '@portcullis/express';

const verify = () => 'ok';
const attempts = [
  () => rateLimit({ windowMS: 60_000 }), // a typo
  () => authGuard({ verify, options: { maxAttempts: 5 } }), // the pre-1.0 nested shape
  () => authGuard({ verify, limiter: createFailureLimiter(), maxAttempts: 5 }), // two sources
];
for (const attempt of attempts) {
  try {
    attempt();
  } catch (error) {
    console.log(`${error.name} ${error.code}: ${error.message.split('. Valid options')[0]}`);
  }
}

// A factory mounted instead of its result fails the first request it sees.
const app = express();
app.use(rateLimit); // should be app.use(rateLimit({ … }))
app.use((error, _req, res, _next) => {
  console.log(`${error.code}: ${error.message}`);
  res.sendStatus(500);
});
const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const res = await fetch(`http://127.0.0.1:${server.address().port}/`);
assert.equal(res.status, 500);

server.close();
// snippet:end
