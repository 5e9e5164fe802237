// "IPv6 networks" in packages/express/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import express from 'express';
import { rateLimit } from '@portcullis/express';

const app = express();
// 2 per /64 client, 8 per /56 and 32 per /48 (4× and 16×), per minute.
app.use(
  rateLimit({ limit: 2, windowMs: 60_000, trustedProxies: ['127.0.0.1'], ipv6Networks: true }),
);
app.get('/', (req, res) => res.json(req.rateLimit));

const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}`;
const from = (ip) => fetch(url, { headers: { 'x-forwarded-for': ip } });

// One customer rotating through the /64s of its /56: 8 requests in all, then 429.
for (let n = 0; n < 8; n++) assert.equal((await from(`2001:db8:1:10${n}::1`)).status, 200);
const refused = await from('2001:db8:1:1ff::1');
console.log(refused.status, refused.headers.get('ratelimit'));
assert.equal(refused.status, 429);

// A NAT64 client is the IPv4 client it carries: its own budget, no network.
const nat64 = await from('64:ff9b::203.0.113.9');
console.log(nat64.status, (await nat64.json()).key);

server.close();
// snippet:end
