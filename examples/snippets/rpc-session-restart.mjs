// "Session creation and restart, stacked" in packages/rpc/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRestartScheduler, createSessionCreationLimiter } from '@portcullis/core';
import { withMethodQuotas, withRestartRequests, withSessionCreationLimit } from '@portcullis/rpc';

// Your agent: its sessions, its dispatcher, its restart.
const sessions = new Set();
function dispatch(method, params) {
  if (method === 'session/new') {
    const sessionId = `s${sessions.size + 1}`;
    sessions.add(sessionId);
    return { sessionId };
  }
  if (method === 'session/load' && sessions.has(params.sessionId)) return params;
  throw new Error(`no such method or session: ${method}`);
}
let restarted = 0;
const restartGateway = () => restarted++;
const conn = { deviceId: 'dev-1', clientIp: '203.0.113.7' };

const scheduler = createRestartScheduler({ onRestart: () => restartGateway() });
const sessionLimiter = createSessionCreationLimiter(); // 120 / 10 s; keep it as long as the agent

const guarded = withMethodQuotas(
  // outermost: every write pays its slot
  withRestartRequests(
    // answers gateway.restart.request
    withSessionCreationLimit(dispatch, {
      // charges only sessions not yet known
      limiter: sessionLimiter,
      isKnown: (params) => sessions.has(params?.sessionId),
    }),
    { scheduler },
  ),
);

const answer = await guarded('gateway.restart.request', { delayMs: 0, reason: 'config' }, conn);
// → { coalesced: false, delayMs: 0, cooldownMsApplied: 0 } (the scheduler's answer)
await sleep(10); // it was due at once: restartGateway has run
const later = await guarded('gateway.restart.request', { reason: 'plugins' }, conn);
// within the 30 s cooldown: scheduled after it (2 s default delay + the cooldown left), not refused
console.log(JSON.stringify(answer), 'restarts:', restarted);
const seconds = (ms) => `${Math.ceil(ms / 1000)}s`;
console.log(
  `next restart in ${seconds(later.delayMs)}, cooldown ${seconds(later.cooldownMsApplied)}`,
);
assert.deepEqual(answer, { coalesced: false, delayMs: 0, cooldownMsApplied: 0 });
assert.equal(restarted, 1);
scheduler.close(); // cancels the pending restart

for (let i = 0; i < 120; i++) await guarded('session/new', {}, conn);
const refused = await guarded('session/new', {}, conn).catch((err) => err.message);
const reopened = await guarded('session/load', { sessionId: 's1' }, conn); // known: free
console.log(sessions.size, refused);
console.log(JSON.stringify(reopened));
assert.equal(sessions.size, 120);
// snippet:end
