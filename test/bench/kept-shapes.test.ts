// packages/core/src/keep-shape.ts: a full collection between logins leaves the layered login's
// optimized code in place. Without the kept shapes, every full collection with no attempt alive
// threw that code away (`reason: weak objects` under --trace-deopt) and each sample of the login
// bench started in the interpreter (bench/NOTES.md "Shapes a full collection took").
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Layered logins on the memory store (the built package, as a server loads it), a wrong password
 * and a right one from each of 2 000 clients per round, a full collection after each round.
 */
const LOGINS = `
const { createAuthGate } = require('@portcullis/core/adapter');
const gate = createAuthGate(
  { scope: 'password', account: (req) => req.account, scopeBudget: { maxAttempts: 1e9, windowMs: 3.6e6, lockoutMs: 3.6e6 } },
  { where: 'shapes', needsVerify: false },
);
const requests = Array.from({ length: 2000 }, (_, i) => ({ socket: { remoteAddress: '10.1.' + (i >> 8) + '.' + (i & 255) }, headers: {} }));
const statuses = new Set();
for (let round = 0; round < 8; round++) {
  for (let i = 0; i < 2000; i++) {
    const failed = gate.decide(requests[i], 'invalid', undefined, 'user' + (i % 200));
    const passed = gate.decide(requests[i], 'ok', undefined, 'user' + (i % 200));
    statuses.add((failed.ok ? 200 : failed.answer.status) + '/' + (passed.ok ? 200 : passed.answer.status));
  }
  globalThis.gc();
}
console.log('answers ' + [...statuses].join(','));
`;

/** Runs `script` under --trace-deopt: its output lines and the functions dropped for weak objects. */
function traced(script: string): { lines: string[]; dropped: string[] } {
  const run = spawnSync(process.execPath, ['--expose-gc', '--trace-deopt', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    env: { ...process.env, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
  });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  const lines = run.stdout.split('\n');
  // The trace is on (V8 traces every function it deoptimizes, and warming up deoptimizes some);
  // code dropped because a collection let go of a shape the code depends on says so.
  expect(lines.some((l) => l.startsWith('[bailout'))).toBe(true);
  const dropped = lines
    .filter((l) => l.includes('reason: weak objects'))
    .map((l) => /<SharedFunctionInfo (.*?)>\)/.exec(l)?.[1] ?? l);
  return { lines, dropped };
}

/**
 * The same logins on a RedisStore (a prefix of their own, deleted after), fewer of them: each is a
 * round trip. Awaited one after another, a full collection after each round.
 */
const REDIS_LOGINS = `
const { createAuthGate } = require('@portcullis/core/adapter');
const { RedisStore } = require('@portcullis/redis');
const { Redis } = require('ioredis');
(async () => {
  const redis = new Redis(process.env.REDIS_URL);
  const prefix = 'kept-shapes:' + process.pid + ':';
  const store = new RedisStore({ sendCommand: (args) => redis.call(args[0], ...args.slice(1)), prefix });
  const gate = createAuthGate(
    { scope: 'password', store, account: (req) => req.account, scopeBudget: { maxAttempts: 1e9, windowMs: 3.6e6, lockoutMs: 3.6e6 } },
    { where: 'shapes', needsVerify: false },
  );
  const requests = Array.from({ length: 500 }, (_, i) => ({ socket: { remoteAddress: '10.2.' + (i >> 8) + '.' + (i & 255) }, headers: {} }));
  const statuses = new Set();
  for (let round = 0; round < 6; round++) {
    for (let i = 0; i < 500; i++) {
      const failed = await gate.decide(requests[i], 'invalid', undefined, 'user' + (i % 50));
      const passed = await gate.decide(requests[i], 'ok', undefined, 'user' + (i % 50));
      statuses.add((failed.ok ? 200 : failed.answer.status) + '/' + (passed.ok ? 200 : passed.answer.status));
    }
    globalThis.gc();
  }
  console.log('answers ' + [...statuses].join(','));
  await gate.close();
  const keys = await redis.keys(prefix + '*');
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
})();
`;

/**
 * Portcullis's functions on the Redis way that a collection discarded before their classes' shapes
 * were kept. ioredis's and Node's own (its commands, sockets, promises) are theirs to keep.
 */
const OWN_ON_REDIS = new Set([
  'StoreStep',
  'ScriptCall',
  'Pending',
  'KeyedSteps',
  'LayeredAttempt',
  'subjectSteps',
  'checkLayered',
  'batchSteps',
  'storeStep',
  'keyStep',
  '#steps',
  '#batch',
  '#trusted',
  '#trustReads',
  '#underAttack',
  '#earn',
]);

describe('kept shapes', () => {
  it('a full collection between layered logins discards none of their optimized code', () => {
    const { lines, dropped } = traced(LOGINS);
    // The logins answered as they should: each wrong password 401, each right one 200.
    expect(lines.filter((l) => l.startsWith('answers '))).toEqual(['answers 401/200']);
    expect(dropped).toEqual([]);
  });

  it('nor of their Redis way', () => {
    const { lines, dropped } = traced(REDIS_LOGINS);
    expect(lines.filter((l) => l.startsWith('answers '))).toEqual(['answers 401/200']);
    expect(dropped.filter((name) => OWN_ON_REDIS.has(name))).toEqual([]);
  });
});
