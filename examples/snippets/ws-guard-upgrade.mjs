// "At the handshake: guardUpgrade" in packages/ws/README.md.
// snippet:start
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { guardUpgrade } from '@portcullis/ws';
import { WebSocket, WebSocketServer } from 'ws';

// Compare in constant time (hashing first makes the lengths equal).
const digest = (value) => createHash('sha256').update(value).digest();
const expected = digest('s3cret'); // e.g. process.env.GATEWAY_TOKEN
function checkToken(token) {
  if (!token) return 'missing';
  return timingSafeEqual(digest(token), expected) ? 'ok' : 'invalid';
}

const server = createServer((_req, res) => res.end('hello'));
const wss = new WebSocketServer({ noServer: true }); // the guard owns the `upgrade` event

const unguard = guardUpgrade(server, wss, {
  scope: 'shared-secret',
  maxAttempts: 3, // the failure-limiter options sit beside verify (default 10 / 60 s / 5 min)
  lockoutMs: 600_000,
  // Browsers cannot set headers on a WebSocket: read the query, a cookie or the subprotocol.
  verify: (req) =>
    checkToken(new URL(req.url ?? '/', 'http://localhost').searchParams.get('token')),
});
wss.on('connection', (ws) => ws.send('welcome')); // authenticated sockets only

server.listen(0, '127.0.0.1');
// snippet:end

import assert from 'node:assert/strict';
import { once } from 'node:events';

await once(server, 'listening');
const url = `ws://127.0.0.1:${server.address().port}`;

// A page in a browser sends Origin; a local client without one is direct-local and never locked out.
function connect(token) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url}/?token=${token}`, { origin: 'http://example.test' });
    ws.on('message', (data) => {
      resolve(`open, got ${data}`);
      ws.close();
    });
    ws.on('unexpected-response', (req, res) => {
      const wait = res.headers['retry-after'];
      resolve(`${res.statusCode} ${res.statusMessage}${wait ? `, Retry-After: ${wait}` : ''}`);
      req.destroy();
    });
    ws.on('error', () => {}); // the refused handshake, reported above
  });
}

const seen = [];
for (const token of ['s3cret', 'wrong', 'wrong', 'wrong', 's3cret'])
  seen.push(await connect(token));
console.log(seen.join('\n'));
assert.deepEqual(seen, [
  'open, got welcome',
  '401 Unauthorized',
  '401 Unauthorized',
  '401 Unauthorized', // this one started the lockout
  '429 Too Many Requests, Retry-After: 600', // the right token too, until it ends
]);

unguard(); // removes the listener and closes the limiters the guard built
wss.close();
server.close();
