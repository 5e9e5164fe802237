// "Live reconfiguration" in packages/ws/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { guardUpgrade } from '@portcullis/ws';
import { WebSocket, WebSocketServer } from 'ws';

const server = createServer();
const wss = new WebSocketServer({ noServer: true });
// The function that removes the guard also carries its reconfigure and limiter; the browser
// limiter and budgets it built follow the limiter's numbers.
const guard = guardUpgrade(server, wss, {
  maxAttempts: 5,
  lockoutMs: 60_000,
  verify: (req) =>
    new URL(req.url ?? '/', 'http://localhost').searchParams.get('token') === 's3cret'
      ? 'ok'
      : 'invalid',
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');

function connect(token) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.address().port}/?token=${token}`, {
      origin: 'http://example.test', // a page in a browser: limited (loopback CLIs are exempt)
    });
    ws.on('open', () => {
      resolve('open');
      ws.close();
    });
    ws.on('unexpected-response', (req, res) => {
      resolve(String(res.statusCode));
      req.destroy();
    });
    ws.on('error', () => {});
  });
}

const seen = [await connect('wrong'), await connect('wrong')];
guard.reconfigure({ maxAttempts: 2 }); // tightened: 2 failures are now a lockout, at once
seen.push(await connect('s3cret'));
guard.reconfigure({ maxAttempts: 10 }); // loosened: an earned lockout is kept
seen.push(await connect('s3cret'));
console.log(seen.join(' '), JSON.stringify(guard.limiter.config));
assert.deepEqual(seen, ['401', '401', '429', '429']);

wss.close();
server.close();
// snippet:end
