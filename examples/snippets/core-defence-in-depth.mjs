// "Defence in depth" in packages/core/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { createAuthGate } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';

const clock = manualClock(1_700_000_000_000);
const gate = createAuthGate({
  verify: (req) => (req.password === 'right' ? 'ok' : 'invalid'),
  // Fold what is one account to one text; leave anything else as it is (non-strings share
  // `account:invalid`).
  account: (req) =>
    typeof req.user === 'string' ? req.user.normalize('NFKC').toLowerCase() : req.user,
  scopeBudget: { maxAttempts: 500, windowMs: 600_000, lockoutMs: 900_000 },
  onLockout: (e) => console.log(e.layer, e.key, e.account, e.lockoutMs),
  clock,
  timers: clock,
});
const from = (ip) => ({ socket: { remoteAddress: ip }, headers: {} });
const status = (r) => (r.ok ? 200 : r.answer.status);

// Alice logged in from her laptop; then 100 addresses guess her password once each.
assert.equal(status(gate.run(from('192.0.2.44'), { user: 'Alice', password: 'right' })), 200);
for (let i = 0; i < 100; i++) gate.run(from(`10.0.0.${i}`), { user: 'alice', password: 'guess' });
// The account is under attack: a client never seen to log in is refused, her laptop is not.
assert.equal(status(gate.run(from('198.51.100.9'), { user: 'alice', password: 'right' })), 429);
assert.equal(status(gate.run(from('192.0.2.44'), { user: 'ALICE', password: 'right' })), 200);
const refused = gate.run(from('198.51.100.9'), { user: 'alice', password: 'right' });
console.log(refused.decision.layer, refused.answer.headers['Retry-After']);
// snippet:end
