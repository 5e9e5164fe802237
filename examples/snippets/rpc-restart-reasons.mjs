// "Session creation and restart, stacked" (the restart reasons) in packages/rpc/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRestartScheduler } from '@portcullis/core';
import { withRestartRequests } from '@portcullis/rpc';

const log = { info: (fields, message) => console.log(message, JSON.stringify(fields)) };
const restartGateway = () => console.log('gateway restarted');
const dispatch = (method) => Promise.reject(new Error(`no such method: ${method}`));

let restarts; // assigned below; onRestart runs long after
const scheduler = createRestartScheduler({
  onRestart: ({ reasons }) => {
    log.info({ reasons, dropped: restarts.reasons().dropped }, 'restarting');
    restartGateway();
  },
});
restarts = withRestartRequests(dispatch, { scheduler });

// 20 requests with distinct reasons, all while one restart is pending: they coalesce into it.
for (let i = 1; i <= 20; i++) {
  await restarts('gateway.restart.request', { delayMs: 50, reason: `change ${i}` });
}
await sleep(100);
const { reasons, dropped } = restarts.reasons(); // the restart that ran
assert.equal(reasons.length, 16); // maxReasons
assert.equal(dropped, 4);
// snippet:end
