// The Defence in depth section of packages/ws/README.md (the code between the markers is the
// README's); below them, what the snippet test checks it does.
// snippet:start
import { createConnectAuth } from '@portcullis/ws';
import { WebSocketServer } from 'ws';

const auth = createConnectAuth({
  scope: 'password',
  trustedProxies: ['127.0.0.1'], // the reverse proxy on this host
  accountLimits: { pair: { maxAttempts: 3 } }, // default 20 failures of one client per account
  onLockout: (e) => console.log('lockout:', e.layer, e.key, e.account),
});

const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
wss.on('connection', (ws, req) => {
  ws.once('message', async (data) => {
    const { user, password } = JSON.parse(String(data));
    // Portcullis compares account names as given: normalise them (non-strings share one bucket).
    const account = typeof user === 'string' ? user.normalize('NFKC').toLowerCase() : user;
    const result = await auth.attempt(req, checkLogin(account, password), { account });
    if (!result.ok) return auth.refuse(ws, result); // the lockout frame, then close 1008
    ws.send(JSON.stringify({ ok: true }));
  });
});
// snippet:end

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { WebSocket } from 'ws';
import { checkLogin } from './defence-check.mjs';

await once(wss, 'listening');
const url = `ws://127.0.0.1:${wss.address().port}`;

/** One connection through the proxy for `ip`: `ok`, or the close code, the error's code (and wait). */
function login(ip, user, password) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { 'x-forwarded-for': ip } });
    let answer;
    ws.on('open', () => ws.send(JSON.stringify({ user, password })));
    ws.on('message', (data) => {
      answer = JSON.parse(String(data));
      if (answer.ok) ws.close(1000);
    });
    ws.on('close', (code) => {
      if (answer.ok) return resolve('ok');
      const wait =
        answer.retryAfterMs === undefined ? '' : ` ${Math.ceil(answer.retryAfterMs / 1000)}s`;
      resolve(`${code} ${answer.details.code}${wait}`);
    });
  });
}

const seen = [];
for (let i = 0; i < 3; i++) seen.push(await login('203.0.113.7', 'alice', 'guess'));
seen.push(await login('203.0.113.7', 'Alice', 'correct horse')); // normalised: alice
console.log('alice from 203.0.113.7:', seen.join(', '));
assert.equal(seen[3], '1008 AUTH_RATE_LIMITED 3600s'); // the right password too
const bob = await login('203.0.113.7', 'bob', 'battery staple');
console.log('bob from 203.0.113.7:', bob);
const elsewhere = await login('198.51.100.9', 'alice', 'correct horse');
console.log('alice from 198.51.100.9:', elsewhere);
assert.deepEqual([bob, elsewhere], ['ok', 'ok']);
wss.close();
