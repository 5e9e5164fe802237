// "A JSON-RPC 2.0 server (node:http)" in packages/rpc/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { isPortcullisRpcError, toJsonRpcError, withMethodQuotas } from '@portcullis/rpc';

// Your dispatcher: a table of handlers (a Map: no prototype names reach a handler).
const config = { theme: 'dark' };
const handlers = new Map([
  ['config.get', () => config],
  ['config.patch', (params) => Object.assign(config, params)],
]);
function dispatch(method, params) {
  const handler = handlers.get(method);
  if (handler === undefined) throw new Error(`no such method: ${method}`);
  return handler(params);
}

const guarded = withMethodQuotas(dispatch);
/** The request object, or undefined for a body that is not a JSON object (never trust the wire). */
function parseRequest(body) {
  try {
    const request = JSON.parse(body);
    return request !== null && typeof request === 'object' ? request : undefined;
  } catch {
    return undefined;
  }
}
const server = createServer(async (req, res) => {
  let body = '';
  for await (const chunk of req) body += chunk;
  const request = parseRequest(body);
  const send = (reply) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  if (request === undefined)
    return send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
  const { id, method, params } = request;
  const conn = { deviceId: req.headers['x-device-id'], clientIp: req.socket.remoteAddress };
  try {
    send({ jsonrpc: '2.0', id, result: await guarded(method, params, conn) });
  } catch (err) {
    send(
      isPortcullisRpcError(err)
        ? toJsonRpcError(err, id)
        : { jsonrpc: '2.0', id, error: { code: -32603, message: 'internal error' } },
    );
  }
}).listen(0, '127.0.0.1');
await once(server, 'listening');

let lastId = 0;
async function call(method, params) {
  const res = await fetch(`http://127.0.0.1:${server.address().port}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-device-id': 'dev-1' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++lastId, method, params }),
  });
  return res.json();
}
const show = ({ id, result, error }) =>
  error === undefined
    ? `${id}: result ${JSON.stringify(result)}`
    : `${id}: error ${error.code} ${error.message} ${JSON.stringify(error.data?.details ?? null)}`;

const first = await call('config.patch', { theme: 'light' });
for (let i = 2; i <= 30; i++) await call('config.patch', { theme: 'light' });
const refused = await call('config.patch', { theme: 'light' }); // the 31st within a minute
const free = await call('config.get'); // not a write method: not limited
const unusable = await call(['config.patch']); // a method name must be a string
const failed = await call('config.reset'); // the dispatcher threw: no details leave the server
const garbled = await (
  await fetch(`http://127.0.0.1:${server.address().port}/`, { method: 'POST', body: '{"id": 7,' })
).json(); // not JSON: answered, never a crash
for (const reply of [first, refused, free, unusable, failed, garbled]) console.log(show(reply));
assert.deepEqual(first, { jsonrpc: '2.0', id: 1, result: { theme: 'light' } });
assert.equal(refused.error.code, -32029);
assert.equal(refused.error.data.retryAfterMs <= 60_000, true);
assert.equal(unusable.error.code, -32600);
assert.deepEqual(failed.error, { code: -32603, message: 'internal error' });
assert.equal(garbled.error.code, -32700);

server.close();
// snippet:end
