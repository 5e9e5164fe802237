// What a login costs Redis: the commands and round trips of one attempt through the auth gate on a
// RedisStore, plain and with the defence-in-depth layers (docs/design.md#defence-in-depth), for a
// returning user (right password, trusted by an earlier login) and for a wrong password.
//
//   npm run build && node bench/redis/login-commands.mjs [--redis redis://127.0.0.1:6379]
//
// Counted, not timed: every command the store sends goes through a counting `sendCommand`, and a
// round trip is a wave of commands sent while none was in flight (commands sent together, as one
// phase's batch is, share one). The keys live under a prefix of this run, deleted at the end (never
// FLUSH). BENCH_JSON names a file for the report as JSON.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createAuthGate } from '@portcullis/core/adapter';
import { RedisStore } from '@portcullis/redis';
import { Redis } from 'ioredis';

const { values } = parseArgs({
  options: { redis: { type: 'string', default: 'redis://127.0.0.1:6379' } },
});

const client = new Redis(values.redis, { lazyConnect: true, maxRetriesPerRequest: 1 });
await client.connect();
const prefix = `bench-login:${process.pid}:`;

/** The counts of the attempt being measured: commands by name, waves of them. */
let counting = false;
let inFlight = 0;
let commands = [];
let roundTrips = 0;

const store = new RedisStore({
  prefix,
  sendCommand(args) {
    if (counting) {
      if (inFlight === 0) roundTrips++;
      commands.push(args[0] === 'EVALSHA' || args[0] === 'EVAL' ? 'script' : args[0]);
    }
    inFlight++;
    return client.call(args[0], ...args.slice(1)).finally(() => {
      inFlight--;
    });
  },
});

const SCOPE_BUDGET = { maxAttempts: 1_000_000, windowMs: 3_600_000, lockoutMs: 3_600_000 };
const gates = {
  'plain auth gate': createAuthGate(
    { store, scope: 'password' },
    { where: 'bench', needsVerify: false },
  ),
  'auth gate + account layers': createAuthGate(
    { store, scope: 'password', account: (req) => req.account, scopeBudget: SCOPE_BUDGET },
    { where: 'bench', needsVerify: false },
  ),
};

/** One attempt's counts (after the scripts are loaded, so that no first-call SCRIPT LOAD counts). */
async function measure(gate, raw, outcome) {
  counting = true;
  commands = [];
  roundTrips = 0;
  const result = await gate.decide(raw, outcome, undefined, raw.account);
  counting = false;
  const byName = {};
  for (const c of commands) byName[c] = (byName[c] ?? 0) + 1;
  return {
    status: result.ok ? 200 : result.answer.status,
    commands: commands.length,
    roundTrips,
    byName,
  };
}

const rows = [];
let n = 0;
for (const [name, gate] of Object.entries(gates)) {
  const raw = () => {
    n++;
    return {
      socket: { remoteAddress: `10.9.${n >> 8}.${n & 255}` },
      headers: {},
      account: `user${n}@example.com`,
    };
  };
  // A returning user: logged in once (trust earned, scripts loaded), then measured.
  const user = raw();
  await gate.decide(user, 'ok', undefined, user.account);
  await gate.decide(user, 'ok', undefined, user.account);
  rows.push({ gate: name, attempt: 'returning user', ...(await measure(gate, user, 'ok')) });
  // A wrong password from a client with no failures yet (after one failure elsewhere loaded the scripts).
  const warm = raw();
  await gate.decide(warm, 'invalid', undefined, warm.account);
  rows.push({ gate: name, attempt: 'wrong password', ...(await measure(gate, raw(), 'invalid')) });
}

console.log('\nRedis commands and round trips per login attempt (one Redis, RedisStore)\n');
console.log(
  `  ${'gate'.padEnd(28)} ${'attempt'.padEnd(16)} status  commands  round trips  by command`,
);
for (const r of rows)
  console.log(
    `  ${r.gate.padEnd(28)} ${r.attempt.padEnd(16)} ${String(r.status).padEnd(7)} ${String(r.commands).padStart(8)}  ${String(r.roundTrips).padStart(11)}  ${JSON.stringify(r.byName)}`,
  );

if (process.env.BENCH_JSON)
  writeFileSync(
    process.env.BENCH_JSON,
    `${JSON.stringify({ date: new Date().toISOString(), rows }, null, 2)}\n`,
  );

for (const gate of Object.values(gates)) await gate.close();
store.close();
let cursor = '0';
do {
  const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
  cursor = next;
  if (keys.length > 0) await client.del(...keys);
} while (cursor !== '0');
client.disconnect();
