// The first example of packages/core/README.md (the code between the markers is the README's).
// snippet:start
import { createHash, timingSafeEqual } from 'node:crypto';
import { authRateLimitedError, createFailureLimiter } from '@portcullis/core';

const digest = (value) => createHash('sha256').update(value).digest();
const SECRET = digest('s3cret'); // e.g. process.env.SECRET

const auth = createFailureLimiter(); // 10 failures / 60 s → 5 min lockout, loopback exempt
function login(ip, password) {
  const before = auth.check(ip, 'password'); // before comparing: locked is locked
  if (!before.allowed) return { status: 429, body: authRateLimitedError(before.retryAfterMs) };
  if (!timingSafeEqual(digest(password), SECRET)) {
    auth.recordFailure(ip, 'password');
    return { status: 401 };
  }
  // A lockout started meanwhile by a concurrent wrong attempt stands: refuse like any attempt.
  const after = auth.recordSuccess(ip, 'password');
  if (!after.allowed) return { status: 429, body: authRateLimitedError(after.retryAfterMs) };
  return { status: 200 };
}
// snippet:end

import assert from 'node:assert/strict';

const statuses = [];
for (let i = 0; i < 10; i++) statuses.push(login('203.0.113.7', 'wrong').status);
const locked = login('203.0.113.7', 's3cret'); // the 10th failure started the lockout
const wait = Math.ceil(locked.body.retryAfterMs / 1000);
console.log(statuses.join(' '), locked.status, locked.body.details.code, `${wait}s`);
assert.deepEqual(statuses, Array(10).fill(401));
assert.equal(locked.status, 429); // the right password too, for 5 minutes
assert.equal(wait, 300);

// Another client is not affected; a loopback address is exempt (the caller vouches it is local).
const others = [login('198.51.100.2', 's3cret').status, login('127.0.0.1', 'wrong').status];
console.log(others.join(' '));
assert.deepEqual(others, [200, 401]);
