// The opening example of packages/rpc/README.md (the code between the markers is the README's);
// below them, what the snippet test checks it does.
// snippet:start
import { withMethodQuotas } from '@portcullis/rpc';

// Your dispatcher, unchanged: (method, params, ctx) => result | Promise<result>.
const dispatch = (method, params) => handlers[method](params);

// 30 calls a minute per write method per device + IP; the 31st rejects with UNAVAILABLE.
const guarded = withMethodQuotas(dispatch, {
  identity: (conn) => ({ deviceId: conn.deviceId, clientIp: conn.ip }),
});
const result = await guarded('config.patch', { theme: 'light' }, conn);
// snippet:end

import assert from 'node:assert/strict';
import { conn, handlers } from './quickstart-check.mjs';

for (let i = 2; i <= 30; i++) await guarded('config.patch', { theme: 'light' }, conn);
const refused = await guarded('config.patch', { theme: 'light' }, conn).catch((error) => error);
const free = await guarded('config.get', undefined, conn);
console.log(JSON.stringify(result), refused.name, refused.code, refused.message);
console.log(JSON.stringify(free));
assert.equal(refused.retryable, true);
guarded.close();
