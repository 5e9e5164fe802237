// "Wrapping a plain dispatcher" in packages/rpc/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { MethodRateLimitedError, withMethodQuotas } from '@portcullis/rpc';

// Your dispatcher, as it is: (method, params, ctx) => result | Promise<result>.
const config = { theme: 'dark' };
let dispatched = 0;
function dispatch(method, params) {
  dispatched++;
  if (method === 'config.get') return { ...config };
  if (method === 'config.patch') return Object.assign(config, params);
  throw new Error(`no such method: ${method}`);
}
const conn = { deviceId: 'dev-1', ip: '203.0.113.7', id: 'c1' }; // your connection object
const params = { theme: 'light' };

const guarded = withMethodQuotas(dispatch, {
  identity: (conn) => ({ deviceId: conn.deviceId, clientIp: conn.ip, connId: conn.id }),
});

const result = await guarded('config.patch', params, conn);
for (let i = 2; i <= 30; i++) await guarded('config.patch', params, conn);
// The 31st config.patch within a minute rejects with MethodRateLimitedError; `dispatch` is not called.
const refused = await guarded('config.patch', params, conn).catch((err) => err);
console.log(JSON.stringify(result), dispatched, refused instanceof MethodRateLimitedError);
console.log(refused.code, refused.message, refused.key);
assert.equal(dispatched, 30);
assert.equal(refused.retryAfterMs > 59_000 && refused.retryAfterMs <= 60_000, true);

const reply = (value) => console.log('reply', JSON.stringify(value));
const answerError = (err) => console.log('answerError', err.name, err.code);
// await, .then(reply, answerError) or .catch() see every outcome: a call never throws.
await guarded('config.patch', params, conn).then(reply, answerError); // still refused
await guarded('config.get', undefined, conn).then(reply, answerError); // not limited: free
assert.equal(dispatched, 31); // 30 config.patch and 1 config.get
// snippet:end
