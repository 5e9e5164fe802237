// "Allow and deny lists" in packages/express/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import express from 'express';
import { createAccessList } from '@portcullis/core';
import { rateLimit } from '@portcullis/express';

// One list for the app; with a RedisStore (store: …) every process enforces the same rules.
const access = createAccessList();
const app = express();
app.use(
  rateLimit({
    limit: 100,
    trustedProxies: ['127.0.0.1'],
    access,
    account: (req) => req.get('x-account'),
  }),
);
app.get('/', (_req, res) => res.send('ok'));

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}`;
const from = async (ip, account) => {
  const headers = { 'x-forwarded-for': ip, ...(account && { 'x-account': account }) };
  const res = await fetch(url, { headers });
  return `${res.status} ${res.status === 403 ? await res.text() : res.headers.get('ratelimit')}`;
};

// Changed at run time, from code, the `portcullis` CLI or an admin endpoint.
await access.deny('203.0.113.0/24', { reason: 'scraping' });
await access.allow('203.0.113.10'); // the office's address: the most specific rule decides
await access.deny('account:mallory', { reason: 'fraud' }); // { ms } for one that ends

const seen = [
  await from('203.0.113.7'),
  await from('203.0.113.10'),
  await from('198.51.100.1', 'mallory'),
  await from('198.51.100.1'),
];
console.log(seen.join('\n'));
assert.deepEqual(seen, [
  '403 {"code":"ACCESS_DENIED","message":"access denied: scraping","retryable":false,"details":{"reason":"scraping"}}',
  '200 null',
  '403 {"code":"ACCESS_DENIED","message":"access denied: fraud","retryable":false,"details":{"reason":"fraud"}}',
  '200 "default";r=99;t=60',
]);

server.close();
await access.close();
// snippet:end
