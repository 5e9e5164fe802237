// "A `ws` message handler" in packages/rpc/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { WebSocket, WebSocketServer } from 'ws';
import { isPortcullisRpcError, toJsonRpcError, withMethodQuotas } from '@portcullis/rpc';

// Your dispatcher: a table of handlers (a Map: no prototype names reach a handler).
const handlers = new Map([['plugins.install', (params) => ({ installed: params.name })]]);
function dispatch(method, params) {
  const handler = handlers.get(method);
  if (handler === undefined) throw new Error(`no such method: ${method}`);
  return handler(params);
}

const guarded = withMethodQuotas(dispatch);
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 }).on('connection', (socket, req) => {
  const conn = {
    deviceId: undefined,
    clientIp: req.socket.remoteAddress,
    connId: crypto.randomUUID(),
  };
  socket.on('message', async (data) => {
    let request;
    try {
      request = JSON.parse(String(data));
    } catch {
      // Not JSON: answered below, never an exception out of this handler.
    }
    if (request === null || typeof request !== 'object') {
      const error = { code: -32700, message: 'parse error' };
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: null, error }));
      return;
    }
    const { id, method, params } = request;
    try {
      socket.send(
        JSON.stringify({ jsonrpc: '2.0', id, result: await guarded(method, params, conn) }),
      );
    } catch (err) {
      // Never rethrow from an async event handler: that is an unhandled rejection.
      const reply = isPortcullisRpcError(err)
        ? toJsonRpcError(err, id)
        : { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'internal error' } };
      socket.send(JSON.stringify(reply));
    }
  });
});
await once(wss, 'listening');

// A client: one call at a time, so each message is the reply to the last call.
const client = new WebSocket(`ws://127.0.0.1:${wss.address().port}`);
await once(client, 'open');
let lastId = 0;
async function call(method, params) {
  client.send(JSON.stringify({ jsonrpc: '2.0', id: ++lastId, method, params }));
  const [data] = await once(client, 'message');
  return JSON.parse(String(data));
}
const show = ({ id, result, error }) =>
  error === undefined
    ? `${id}: result ${JSON.stringify(result)}`
    : `${id}: error ${error.code} ${error.message}`;

const replies = [await call('plugins.install', { name: 'audit' })];
for (let i = 2; i <= 30; i++) await call('plugins.install', { name: 'audit' });
replies.push(await call('plugins.install', { name: 'audit' })); // the 31st within a minute
replies.push(await call('plugins.remove', { name: 'audit' })); // the dispatcher threw
for (const reply of replies) console.log(show(reply));
assert.deepEqual(replies[0], { jsonrpc: '2.0', id: 1, result: { installed: 'audit' } });
assert.equal(replies[1].error.code, -32029);
assert.deepEqual(replies[2].error, { code: -32603, message: 'internal error' });

client.close();
await once(client, 'close');
wss.close();
// snippet:end
