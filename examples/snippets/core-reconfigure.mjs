// "Live reconfiguration" in packages/core/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { createFailureLimiter, createWindowLimiter } from '@portcullis/core';

const show = (d) =>
  `${d.reason} ${d.remaining}/${d.limit}, retry in ${Math.ceil(d.retryAfterMs / 1000)}s`;

const auth = createFailureLimiter({ maxAttempts: 5, lockoutMs: 60_000 });
for (let i = 0; i < 3; i++) auth.recordFailure('203.0.113.7');
console.log(show(auth.check('203.0.113.7'))); // allowed 2/5

auth.reconfigure({ maxAttempts: 3, lockoutMs: 600_000 }); // tightened: applies at once
const tightened = auth.check('203.0.113.7'); // 3 failures ≥ 3: locked from this call, 10 minutes
auth.reconfigure({ maxAttempts: 10 }); // loosened: an earned lockout is kept
const loosened = auth.check('203.0.113.7');
console.log(show(tightened));
console.log(show(loosened), JSON.stringify(auth.config));
assert.equal(tightened.reason, 'locked');
assert.equal(loosened.reason, 'locked');

const api = createWindowLimiter({ name: 'api', limit: 5, windowMs: 60_000 });
for (let i = 0; i < 3; i++) api.consume('alice');
api.reconfigure({ limit: 2 }); // counts are kept and read under the new rule
const over = api.consume('alice');
api.reconfigure({ limit: 4 }); // raising the limit frees room at once
const room = api.consume('alice');
console.log(show(over));
console.log(show(room), JSON.stringify(api.rule));
assert.equal(over.allowed, false);
assert.equal(room.allowed, true);

// Only the numbers can change; anything else is refused like a bad option at construction.
assert.throws(
  () => api.reconfigure({ name: 'other' }),
  (error) => {
    console.log(`${error.code}: ${error.message}`);
    return error.code === 'ERR_PORTCULLIS_UNKNOWN_OPTION';
  },
);
// snippet:end
