// "Requests in flight" in packages/express/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import express from 'express';
import { concurrency } from '@portcullis/express';

let exportsDone;
const slowExports = new Promise((resolve) => {
  exportsDone = resolve;
});
let running = 0;
let bothRunning;
const started = new Promise((resolve) => {
  bothRunning = resolve;
});

const app = express();
// At most 2 exports of one client at a time; each holds its slot until its response is over.
app.get('/export', concurrency({ max: 2 }), async (_req, res) => {
  if (++running === 2) bothRunning();
  await slowExports;
  res.send('exported');
});

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}/export`;

const first = fetch(url);
const second = fetch(url);
await started;
const third = await fetch(url);
console.log(third.status, third.headers.get('retry-after'), await third.text());
assert.equal(third.status, 429);

exportsDone(); // both exports answer, and their slots come back
console.log((await first).status, (await second).status, (await fetch(url)).status);

server.close();
// snippet:end
