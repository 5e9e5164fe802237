// "In the first frame: createConnectAuth" in packages/ws/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createConnectAuth } from '@portcullis/ws';
import { WebSocket, WebSocketServer } from 'ws';

const digest = (value) => createHash('sha256').update(value).digest();
const secrets = { 'shared-secret': digest('s3cret'), 'device-token': digest('device-1') };
const check = (scope, token) =>
  !token ? 'missing' : timingSafeEqual(digest(token), secrets[scope]) ? 'ok' : 'invalid';

// One per process, shared by every socket; the failure-limiter options are flat.
const auth = createConnectAuth({ scope: 'shared-secret', maxAttempts: 3, lockoutMs: 600_000 });

const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
wss.on('connection', (ws, req) => {
  ws.once('message', async (data) => {
    const hello = JSON.parse(String(data));
    // Each credential class locks out on its own: pass the class per call.
    const scope = hello.deviceToken ? 'device-token' : 'shared-secret';
    const result = await auth.attempt(req, check(scope, hello.deviceToken ?? hello.token), {
      scope,
    });
    if (!result.ok)
      return auth.refuse(ws, result, (error) => ({ type: 'res', id: hello.id, ok: false, error }));
    ws.send(JSON.stringify({ type: 'res', id: hello.id, ok: true }));
  });
});
await once(wss, 'listening');
const url = `ws://127.0.0.1:${wss.address().port}`;

// A page in a browser sends Origin; a local client without one is direct-local and never locked out.
function hello(frame) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { origin: 'http://example.test' });
    let answer;
    ws.on('open', () => ws.send(JSON.stringify({ type: 'req', id: 1, ...frame })));
    ws.on('message', (data) => {
      answer = JSON.parse(String(data));
      if (answer.ok) ws.close(1000);
    });
    ws.on('close', (code) => resolve(`${code} ${answer.ok ? 'ok' : answer.error.details.code}`));
  });
}

const seen = [];
for (const token of ['wrong', 'wrong', 'wrong', 's3cret']) seen.push(await hello({ token }));
seen.push(await hello({ deviceToken: 'device-1' }));
console.log(seen.join('\n'));
assert.deepEqual(seen, [
  '1008 AUTH_INVALID',
  '1008 AUTH_INVALID',
  '1008 AUTH_INVALID', // this one started the lockout
  '1008 AUTH_RATE_LIMITED', // the right token too, until it ends
  '1000 ok', // another credential class, not locked out
]);

wss.close();
// snippet:end
