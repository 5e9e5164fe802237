// "Operators: lockouts, bans and the unlock" in packages/core/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { createFailureLimiter } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';

const clock = manualClock(1_700_000_000_000);
const auth = createFailureLimiter({ maxAttempts: 3, clock, timers: clock });
for (let i = 0; i < 3; i++) auth.recordFailure('203.0.113.9', 'shared-secret');
auth.ban('198.51.100.7', { ms: 3_600_000 }); // an operator's ban: one hour

// Who is locked out, and why: soonest end first.
for (const l of auth.lockouts()) console.log(l.scope, l.key, l.layer, `${l.retryAfterMs} ms`);
assert.deepEqual(
  auth.lockouts().map((l) => [l.scope, l.key, l.layer, l.retryAfterMs]),
  [
    ['shared-secret', '203.0.113.9', 'client', 300_000],
    ['default', '198.51.100.7', 'ban', 3_600_000],
  ],
);
// A ban answers exactly like an earned lockout (the client cannot tell them apart).
assert.equal(auth.check('198.51.100.7').reason, 'locked');

auth.reset('203.0.113.9', 'shared-secret'); // the unlock
assert.equal(auth.check('203.0.113.9', 'shared-secret').allowed, true);
assert.deepEqual(auth.lockouts({ scope: 'shared-secret' }), []);
// snippet:end
