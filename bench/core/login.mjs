// Login bench ("login layers"): CPU ns per login attempt of Portcullis's auth gate without and with
// the account layers (docs/design.md#defence-in-depth), and of rate-limiter-flexible's
// login-protection recipe, in one process per scenario, alternating rounds. Method and results:
// bench/README.md ("bench/core: login layers").
// Run with: node --expose-gc bench/core/login.mjs  (after `npm run build`); BENCH_JSON writes a report.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from '@portcullis/core';
import { createAuthGate } from '@portcullis/core/adapter';

const require = createRequire(import.meta.url);
const { RateLimiterMemory } = require('rate-limiter-flexible');

/** A positive integer from the environment, or `fallback`; anything else stops the run at once. */
function countFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`bench/core/login: ${name} must be a positive integer, got "${raw}"`);
  return n;
}

/**
 * Timed rounds per process. At most 7: a measured client fails once per round, once in the untimed
 * first round and at most once more in an answer check, and must stay under every limit (the
 * client's 10 in 60 s, rate-limiter-flexible's 10 consecutive) so that every call does the same work.
 */
const ROUNDS = Math.min(countFromEnv('BENCH_ROUNDS', 7), 7);
/** Processes per scenario; a contender's figure is the median of its per-process medians. */
const PROCESSES = countFromEnv('BENCH_PROCESSES', 3);
/** Calls per sample of the success scenario (its clients can log in any number of times). */
const SUCCESS_N = countFromEnv('BENCH_LOGIN_SUCCESS_N', 100_000);

/**
 * Failing clients (each its own IPv4 address) and the accounts they guess: client i guesses
 * account i mod ACCOUNTS, so each account sees 10 clients, and in a whole process at most
 * 10 × 8 + 2 = 82 failures: under the account layer's 100 per hour, as every client stays under its
 * own limits. The figures are of attempts that count, not of refusals. (The warm-up clients, as
 * many again, guess accounts of their own.)
 */
const CLIENTS = 20_000;
const ACCOUNTS = 2_000;
/**
 * Returning users of the success scenario: one client and one account each, 2 trusts each
 * (the account's and the scope's) = 8 000 in the scope's table, under `maxTrusted` (10 000): no
 * success evicts another's trust. `BENCH_LOGIN_USERS` (at most 5 000, for the same reason) sets
 * how many: with a few, every contender's state stays in the CPU's caches, which shows what is
 * the code's own cost and what is reading memory (bench/NOTES.md "A returning user: code or
 * memory").
 */
const USERS = Math.min(countFromEnv('BENCH_LOGIN_USERS', 4_000), 5_000);
/**
 * Every Portcullis gate holds every key of the run (40 000 clients with the warm-up ones; the
 * layers' 84 001 keys):
 * bounded above what the run needs, so that no call evicts. Eviction has its own scenario in
 * bench/core/run.mjs ("record a failure … evicting").
 */
const MAX_ENTRIES = 100_000;
/**
 * The scope budget is on, with a budget the run never reaches (at most 3 × 20 000 × 8 failures in
 * a process): the figures are the cost of counting in the scope, not of refusing.
 */
const SCOPE_BUDGET = { maxAttempts: 1_000_000, windowMs: 3_600_000, lockoutMs: 3_600_000 };
const SCOPE = 'password';

const ipOf = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const accountOf = (i) => `user${i}@example.com`;

/** The request each client sends: shaped like Node's, made once (a server gets a new one per request, of the same shape). */
function requests(count) {
  return Array.from({ length: count }, (_, i) => ({
    socket: { remoteAddress: ipOf(i) },
    headers: { host: 'login.example', 'content-type': 'application/json' },
  }));
}

/*
 * As in bench/core/run.mjs: every contender gets a timing loop of its own, compiled from source,
 * so that no contender pays for another's shapes at the call site; a loop awaits only when its
 * contender returns promises (rate-limiter-flexible does: that is how it is used). The figure is
 * CPU time (user + system, every thread: GC included) per call. Every sample starts after a full
 * collection and a 25 ms pause for the sweeping that follows it, unless BENCH_LOGIN_GC=0: a full
 * collection can discard optimized code whose objects' shapes it let go of (rate-limiter-flexible's
 * does, bench/NOTES.md "Shapes a full collection took"), which then starts the sample slower than
 * a server between two rarer collections runs.
 */
const COLLECT = process.env.BENCH_LOGIN_GC !== '0';
const SYNC_LOOP =
  'return function (fn, from, to) { const c = process.cpuUsage(); for (let i = from; i < to; i++) fn(i); const u = process.cpuUsage(c); return ((u.user + u.system) * 1000) / (to - from); }';
const ASYNC_LOOP =
  'return async function (fn, from, to) { const c = process.cpuUsage(); for (let i = from; i < to; i++) await fn(i); const u = process.cpuUsage(c); return ((u.user + u.system) * 1000) / (to - from); }';
const loops = new WeakMap();

/** CPU ns per call of `fn(i)` for i in [from, to), in `fn`'s own timing loop. */
async function time(fn, from, to) {
  let loop = loops.get(fn);
  if (loop === undefined) {
    const probe = fn(from);
    const isAsync = probe !== undefined && typeof probe.then === 'function';
    if (isAsync) await probe;
    loop = new Function(isAsync ? ASYNC_LOOP : SYNC_LOOP)();
    loops.set(fn, loop);
  }
  if (COLLECT) {
    globalThis.gc?.();
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return loop(fn, from, to);
}

/**
 * What every contender's attempt answers; the loop checks one answer per sample, so that a
 * contender that started refusing (a limit reached by mistake) fails the run instead of looking
 * fast.
 */
const expected = { invalid: 401, ok: 200 };

/** (a) The plain auth gate: the client layer only (10 failures in 60 s, then 5 minutes). */
function plainGate() {
  const gate = createAuthGate(
    { scope: SCOPE, maxEntries: MAX_ENTRIES },
    { where: 'bench', needsVerify: false },
  );
  return (raw, _account, outcome) => status(gate.decide(raw, outcome));
}

/**
 * (b) The same gate with the account layers: `account` given, `accountLimits` the defaults (pair,
 * account, spray), `scopeBudget` on. `undefined` when this build of core has no layers yet.
 */
function layeredGate() {
  let gate;
  try {
    gate = createAuthGate(
      {
        scope: SCOPE,
        maxEntries: MAX_ENTRIES,
        account: (req) => req.account,
        scopeBudget: SCOPE_BUDGET,
      },
      { where: 'bench', needsVerify: false },
    );
  } catch (err) {
    // Only a core without the option at all; any other configuration error stops the run.
    if (err?.code === 'ERR_PORTCULLIS_UNKNOWN_OPTION' && err.option === 'account') return undefined;
    throw err;
  }
  return (raw, account, outcome) => status(gate.decide(raw, outcome, undefined, account));
}

/** A gate result's HTTP status (sync or async, as the gate answers). */
function status(result) {
  return typeof result.then === 'function'
    ? result.then((r) => (r.ok ? 200 : r.answer.status))
    : result.ok
      ? 200
      : result.answer.status;
}

/**
 * (c) rate-limiter-flexible's login-protection recipe ("Brute-force protection" in its wiki), on
 * RateLimiterMemory: consecutive failures by username + IP (10 points, 90 days, blocked 1 hour)
 * and slow brute force by IP (100 points a day, blocked 1 day). Both are read first; a blocked one
 * refuses (429); a failure consumes a point of each; a success deletes the username + IP key when
 * it holds failures. `pairDurationSec` is the consecutive limiter's duration.
 */
function flexibleRecipe(pairDurationSec) {
  const maxConsecutive = 10;
  const maxPerDay = 100;
  const byPair = new RateLimiterMemory({
    keyPrefix: 'login_fail_consecutive_username_and_ip',
    points: maxConsecutive,
    duration: pairDurationSec,
    blockDuration: 60 * 60,
  });
  const byIp = new RateLimiterMemory({
    keyPrefix: 'login_fail_ip_per_day',
    points: maxPerDay,
    duration: 60 * 60 * 24,
    blockDuration: 60 * 60 * 24,
  });
  return async function login(raw, account, outcome) {
    const ip = raw.socket.remoteAddress;
    const pairKey = `${account}_${ip}`;
    const [pair, perIp] = await Promise.all([byPair.get(pairKey), byIp.get(ip)]);
    if (
      (perIp !== null && perIp.consumedPoints > maxPerDay) ||
      (pair !== null && pair.consumedPoints > maxConsecutive)
    )
      return 429;
    if (outcome === 'invalid') {
      try {
        await Promise.all([byIp.consume(ip), byPair.consume(pairKey)]);
        return 401;
      } catch (rejected) {
        if (rejected instanceof Error) throw rejected;
        return 429;
      }
    }
    if (pair !== null && pair.consumedPoints > 0) await byPair.delete(pairKey);
    return 200;
  };
}

/*
 * (d) The floor: what the same answers cost written by hand on plain `Map`s, with nothing a
 * library needs (no IP canonicalisation, no decision objects, no events, no bound on keys, no
 * eviction order for trust). Each key's state is a log of failure times in its window and the end
 * of its lockout, at the client layer's numbers (10 in 60 s, 5 minutes) and, with `layers`, the
 * layers' defaults (pair 20 / 1 h, spray 10 distinct accounts in 10 min, account 100 in 1 h) and
 * the bench's scope budget; a success forgets the client's and the pair's failures and refreshes
 * two trusts (delete + set: latest last). The spray layer counts distinct accounts in its window,
 * an account's earlier failure giving way to its latest, as Portcullis's does. It approximates the
 * cost of the layers' own work (same numbers, same answers for this bench's clients), not a proven
 * lower bound: a cleverer hand could do less.
 */
function mapFloor(layers) {
  const failed = (map, key, now, max, windowMs, lockoutMs) => {
    let s = map.get(key);
    if (s === undefined) {
      s = { log: [], lockedUntil: 0 };
      map.set(key, s);
    }
    while (s.log.length > 0 && s.log[0] + windowMs <= now) s.log.shift();
    s.log.push(now);
    if (s.log.length >= max) {
      s.lockedUntil = now + lockoutMs;
      s.log.length = 0;
    }
  };
  const locked = (map, key, now) => (map.get(key)?.lockedUntil ?? 0) > now;
  const clients = new Map();
  if (!layers)
    return (raw, _account, outcome) => {
      const now = Date.now();
      const ip = raw.socket.remoteAddress;
      if (locked(clients, ip, now)) return 429;
      if (outcome === 'ok') {
        clients.delete(ip);
        return 200;
      }
      failed(clients, ip, now, 10, 60_000, 300_000);
      return 401;
    };
  const pairs = new Map();
  const sprays = new Map();
  const accounts = new Map();
  const scope = new Map();
  const accountTrust = new Map();
  const scopeTrust = new Map();
  const refresh = (map, key, now) => {
    map.delete(key);
    map.set(key, now);
  };
  return (raw, account, outcome) => {
    const now = Date.now();
    const ip = raw.socket.remoteAddress;
    const pair = `${ip}\u0000${account}`;
    if (locked(clients, ip, now) || locked(pairs, pair, now) || locked(sprays, ip, now)) return 429;
    const underAttack = locked(accounts, account, now) || locked(scope, '*', now);
    if (underAttack && !accountTrust.has(pair) && !scopeTrust.has(ip)) return 429;
    if (outcome === 'ok') {
      clients.delete(ip);
      pairs.delete(pair);
      refresh(accountTrust, pair, now);
      refresh(scopeTrust, ip, now);
      return 200;
    }
    failed(clients, ip, now, 10, 60_000, 300_000);
    failed(pairs, pair, now, 20, 3_600_000, 3_600_000);
    // Distinct accounts in the last 10 minutes: an account's earlier failure gives way to this one.
    let spray = sprays.get(ip);
    if (spray === undefined) {
      spray = { log: [], members: [], lockedUntil: 0 };
      sprays.set(ip, spray);
    }
    while (spray.log.length > 0 && spray.log[0] + 600_000 <= now) {
      spray.log.shift();
      spray.members.shift();
    }
    const earlier = spray.members.indexOf(account);
    if (earlier !== -1) {
      spray.log.splice(earlier, 1);
      spray.members.splice(earlier, 1);
    }
    spray.members.push(account);
    spray.log.push(now);
    if (spray.log.length >= 10) {
      spray.lockedUntil = now + 3_600_000;
      spray.log.length = 0;
      spray.members.length = 0;
    }
    failed(accounts, account, now, 100, 3_600_000, 3_600_000);
    failed(
      scope,
      '*',
      now,
      SCOPE_BUDGET.maxAttempts,
      SCOPE_BUDGET.windowMs,
      SCOPE_BUDGET.lockoutMs,
    );
    return 401;
  };
}

/**
 * (e) The memory store's own share of the layered gate: the store calls that gate (b) makes for an
 * attempt, on two memory stores as (b) has them (the client's table in one, the four layers'
 * tables and the trust tables in its sibling), each phase at one time, with nothing around them:
 * no client resolution (the address is the key), no gate, no limiter, no decision of its own, no
 * events. It reaches into the store's internal tables and time pinning (`failureTable`,
 * `pinTime`), which only the gate's plumbing uses. What the layered gate costs beyond it is the
 * gate's own path; the rest is the store's reads of five keys (bench/NOTES.md "Where a layered
 * wrong password's time goes").
 */
function storeCalls() {
  const clientStore = new MemoryStore({ maxEntries: MAX_ENTRIES });
  const layerStore = new MemoryStore({ maxEntries: MAX_ENTRIES });
  const rule = (maxAttempts, windowMs, lockoutMs) => ({ maxAttempts, windowMs, lockoutMs });
  const client = clientStore.failureTable(`auth:${SCOPE}`);
  const clientRule = rule(10, 60_000, 300_000);
  const pair = layerStore.failureTable(`auth.pair:${SCOPE}`);
  const pairRule = rule(20, 3_600_000, 3_600_000);
  const spray = layerStore.failureTable(`auth.spray:${SCOPE}`);
  const sprayRule = rule(10, 600_000, 3_600_000);
  const accounts = layerStore.failureTable(`auth.account:${SCOPE}`);
  const accountRule = rule(100, 3_600_000, 3_600_000);
  const scope = layerStore.failureTable(`auth.scope:${SCOPE}`);
  const trust = { trustMs: 2_592_000_000, maxTrusted: 10_000 };
  const [accountTrust, scopeTrust] = [`auth.trust:${SCOPE}`, `auth.scope-trust:${SCOPE}`];
  const pin = () => {
    clientStore.pinTime();
    layerStore.pinTime(clientStore.pinnedTime);
  };
  const unpin = () => {
    clientStore.unpinTime();
    layerStore.unpinTime();
  };
  return (raw, account, outcome) => {
    const ip = raw.socket.remoteAddress;
    const accountKey = `account:${account}`;
    const pairKey = `${ip}\u0000${accountKey}`;
    pin();
    const c = client.checkFailures(ip, clientRule);
    const p = pair.checkFailures(pairKey, pairRule);
    const sp = spray.checkFailures(ip, sprayRule);
    const a = accounts.checkFailures(accountKey, accountRule);
    const sc = scope.checkFailures('*', SCOPE_BUDGET);
    unpin();
    if (!c.allowed || !p.allowed || !sp.allowed || !a.allowed || !sc.allowed) return 429;
    pin();
    try {
      if (outcome === 'ok') {
        client.recordSuccess(ip, clientRule);
        if (p.remaining < p.limit) pair.recordSuccess(pairKey, pairRule);
        layerStore.trust(scopeTrust, 's', ip, trust);
        layerStore.trust(accountTrust, accountKey, ip, trust);
        return 200;
      }
      client.recordFailure(ip, clientRule);
      pair.recordFailure(pairKey, pairRule);
      spray.recordDistinct(ip, accountKey, sprayRule);
      accounts.recordFailure(accountKey, accountRule);
      scope.recordFailure('*', SCOPE_BUDGET);
      return 401;
    } finally {
      unpin();
    }
  };
}

/** The longest a Node timer holds (2^31 − 1 ms, 24.8 days), in whole seconds. */
const LONGEST_TIMER_SEC = Math.floor((2 ** 31 - 1) / 1000);

/** Every contender, as `attempt(raw, account, outcome) → status` (or a promise of it). */
function contenders() {
  const layered = layeredGate();
  return {
    'portcullis auth gate': plainGate(),
    ...(layered !== undefined && { 'portcullis auth gate + account layers': layered }),
    'rate-limiter-flexible login recipe': flexibleRecipe(60 * 60 * 24 * 90),
    [`rate-limiter-flexible login recipe, ${LONGEST_TIMER_SEC} s pair duration`]:
      flexibleRecipe(LONGEST_TIMER_SEC),
    ...(layered !== undefined && { 'memory store calls of the layered gate': storeCalls() }),
    'hand-written Map floor, client only': mapFloor(false),
    'hand-written Map floor, every layer': mapFloor(true),
  };
}

/** Checks an answer (sync or async) against the status the scenario expects. */
function expect(got, want, name) {
  const check = (s) => {
    if (s !== want) throw new Error(`bench/core/login: ${name} answered ${s}, expected ${want}`);
  };
  return typeof got?.then === 'function' ? got.then(check) : check(got);
}

/**
 * The scenarios. Each turns an attempt into `fn(i)` for the timing loop; clients [0, n) are
 * measured, clients [n, 2n) (with accounts of their own) only warm the code up, so that the
 * measured clients spend none of their budget on it. `failure`: a wrong password from each of
 * 20 000 clients once per sample. `success`: returning users (4 000, one account each) logging in,
 * 100 000 calls per sample. `retry`: a wrong password then the right one, from each of 20 000
 * clients once per sample (the figure is of the two calls together).
 */
const scenarios = {
  failure: {
    title: 'a wrong password (ns per attempt)',
    n: CLIENTS,
    make(attempt) {
      const raws = requests(2 * CLIENTS);
      const accounts = Array.from({ length: 2 * ACCOUNTS }, (_, i) => accountOf(i));
      const accountFor = (i) => accounts[(i % ACCOUNTS) + (i < CLIENTS ? 0 : ACCOUNTS)];
      return (i) => attempt(raws[i], accountFor(i), 'invalid');
    },
    want: expected.invalid,
  },
  success: {
    title: 'a returning user, right password (ns per attempt)',
    n: SUCCESS_N,
    make(attempt) {
      // Successes spend no budget: the warm-up calls are the same users' (more of them would
      // overfill the trust table).
      const raws = requests(USERS);
      const accounts = Array.from({ length: USERS }, (_, i) => accountOf(i));
      return (i) => attempt(raws[i % USERS], accounts[i % USERS], 'ok');
    },
    want: expected.ok,
  },
  retry: {
    title: 'a wrong password, then the right one (ns per pair of attempts)',
    n: CLIENTS,
    make(attempt) {
      const raws = requests(2 * CLIENTS);
      const accounts = Array.from({ length: 2 * ACCOUNTS }, (_, i) => accountOf(i));
      const accountFor = (i) => accounts[(i % ACCOUNTS) + (i < CLIENTS ? 0 : ACCOUNTS)];
      return (i) => {
        const raw = raws[i];
        const account = accountFor(i);
        const first = attempt(raw, account, 'invalid');
        return typeof first?.then === 'function'
          ? first.then(() => attempt(raw, account, 'ok'))
          : attempt(raw, account, 'ok');
      };
    },
    want: expected.ok,
  },
};

/**
 * Warm-up passes over the warm-up clients: the first rounds over new code ran 3–6× slower than the
 * later ones (V8 still compiling); a warm-up client fails at most 4 times (probe + 3 passes).
 */
const WARM_PASSES = 3;

/**
 * One scenario in this process: warm-up passes over the warm-up clients, one untimed round over the
 * measured ones (every contender's first meeting with them: records created, 4–6× a later round),
 * then ROUNDS alternating timed rounds.
 */
async function runScenario(id) {
  const sc = scenarios[id];
  const fns = Object.fromEntries(
    Object.entries(contenders()).map(([name, attempt]) => [name, sc.make(attempt)]),
  );
  for (const [name, fn] of Object.entries(fns)) {
    for (let p = 0; p < WARM_PASSES; p++) await time(fn, sc.n, 2 * sc.n);
    await time(fn, 0, sc.n);
    await expect(fn(0), sc.want, name);
  }
  const samples = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const order = Object.entries(fns);
    if (r % 2) order.reverse();
    for (const [name, fn] of order) samples[name].push(await time(fn, 0, sc.n));
  }
  // A measured client has now failed at most 9 times: its answer must still be the expected one.
  for (const [name, fn] of Object.entries(fns)) await expect(fn(sc.n - 1), sc.want, name);
  return {
    id,
    title: sc.title,
    rows: Object.entries(samples).map(([name, xs]) => ({ name, ns: median(xs) })),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function spawnJob(id) {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', fileURLToPath(import.meta.url), `${JOB_FLAG}${id}`],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1 << 24,
    },
  );
  if (r.status !== 0)
    throw new Error(`bench/core/login: job ${id} failed (${r.status ?? r.signal})`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

/**
 * The scenarios named on the command line (`node --expose-gc bench/core/login.mjs failure retry`),
 * default all of them. Arguments rather than a BENCH_* variable: `npm run bench` hands its
 * variables to every benchmark, and bench/core/run.mjs has jobs of its own.
 */
function selectedJobs() {
  const all = Object.keys(scenarios);
  const ids = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  if (ids.length === 0) return all;
  for (const id of ids)
    if (!all.includes(id)) throw new Error(`bench/core/login: no scenario ${id}`);
  return ids;
}

/** A child process runs one scenario: `--job=<id>`. */
const JOB_FLAG = '--job=';

/*
 * Instructions instead of time (`--instructions`): each contender alone in a process under
 * valgrind's cachegrind, `node --single-threaded` so that no compiler or collector thread makes
 * two runs differ (repeated runs agree within 0.1 %). A run makes the warm-up passes and then
 * `passes` passes over the measured clients; two runs that differ only in their passes give the
 * instructions of one attempt, what starting Node, loading and compiling cost cancelling out.
 * Instructions are not time (a cache miss counts as one), but they do not move with the machine's
 * load: a change of 1 % shows, where time's noise between processes is ±25 %.
 */
const COUNT_FLAG = '--count=';
const INSTRUCTION_CONTENDERS = [
  'portcullis auth gate',
  'portcullis auth gate + account layers',
  `rate-limiter-flexible login recipe, ${Math.floor((2 ** 31 - 1) / 1000)} s pair duration`,
  'memory store calls of the layered gate',
];
/** Calls per pass: the success scenario's 100 000 would take minutes under valgrind. */
const COUNT_N = 20_000;
/** The passes of the two runs of a contender (a measured client fails at most 1 + 4 times). */
const FEW_PASSES = 1;
const MORE_PASSES = 4;

/** `--count=<scenario>:<contender index>:<passes>`: the calls, untimed, no collections. */
async function runCount(spec) {
  const [id, index, passes] = spec.split(':');
  const sc = scenarios[id];
  const name = INSTRUCTION_CONTENDERS[Number(index)];
  const attempt = contenders()[name];
  if (sc === undefined || attempt === undefined)
    throw new Error(`bench/core/login: no count job ${spec}`);
  const fn = sc.make(attempt);
  const n = Math.min(sc.n, COUNT_N);
  const pass = async (from, to) => {
    for (let i = from; i < to; i++) {
      const r = fn(i);
      if (r !== undefined && typeof r.then === 'function') await r;
    }
  };
  for (let p = 0; p < WARM_PASSES; p++) await pass(sc.n, sc.n + n);
  for (let p = 0; p < Number(passes); p++) await pass(0, n);
  await expect(fn(n - 1), sc.want, name);
  return n;
}

/** The instructions of one run of `spec` under cachegrind (its `I refs`). */
function instructionsOf(spec) {
  const r = spawnSync(
    'valgrind',
    [
      '--tool=cachegrind',
      '--cache-sim=no',
      '--cachegrind-out-file=/dev/null',
      process.execPath,
      '--single-threaded',
      fileURLToPath(import.meta.url),
      `${COUNT_FLAG}${spec}`,
    ],
    { encoding: 'utf8', maxBuffer: 1 << 24 },
  );
  if (r.error !== undefined)
    throw new Error(
      `bench/core/login --instructions needs valgrind on the PATH (${r.error.message})`,
    );
  const refs = /I\s+refs:\s+([\d,]+)/.exec(r.stderr ?? '');
  if (r.status !== 0 || refs === null)
    throw new Error(
      `bench/core/login: count job ${spec} failed (${r.status ?? r.signal}): ${r.stderr}`,
    );
  return Number((refs[1] ?? '').replaceAll(',', ''));
}

/** `--instructions [scenarios]`: instructions per attempt of each of {@link INSTRUCTION_CONTENDERS}. */
function countInstructions() {
  const ids = selectedJobs().filter((id) => id !== 'retry' || process.argv.includes('retry'));
  const report = { date: new Date().toISOString(), node: process.version, instructions: [] };
  for (const id of ids) {
    const n = Math.min(scenarios[id].n, COUNT_N);
    console.log(`\n${scenarios[id].title.replace('(ns per', '(instructions per')}`);
    const rows = INSTRUCTION_CONTENDERS.map((name, i) => {
      const few = instructionsOf(`${id}:${i}:${FEW_PASSES}`);
      const more = instructionsOf(`${id}:${i}:${MORE_PASSES}`);
      return { name, instructions: (more - few) / ((MORE_PASSES - FEW_PASSES) * n) };
    });
    const plain = rows[0].instructions;
    for (const r of rows)
      console.log(
        `  ${r.name.padEnd(58)} ${r.instructions.toFixed(0).padStart(8)}  ${(r.instructions / plain).toFixed(2)}× plain gate`,
      );
    report.instructions.push({ id, title: scenarios[id].title, rows });
  }
  return report;
}

async function main() {
  const count = process.argv.find((a) => a.startsWith(COUNT_FLAG))?.slice(COUNT_FLAG.length);
  if (count !== undefined) {
    await runCount(count);
    process.exit(0);
  }
  if (process.argv.includes('--instructions')) {
    const report = countInstructions();
    if (process.env.BENCH_JSON)
      (await import('node:fs')).writeFileSync(
        process.env.BENCH_JSON,
        `${JSON.stringify(report, null, 2)}\n`,
      );
    process.exit(0);
  }
  const job = process.argv.find((a) => a.startsWith(JOB_FLAG))?.slice(JOB_FLAG.length);
  if (job !== undefined) {
    // rate-limiter-flexible's recipe asks for a 90-day timer, which Node cannot hold: it warns once
    // (TimeoutOverflowWarning) and fires the timer after 1 ms. The warning is expected here and
    // said in bench/README.md; every other warning is printed as usual.
    process.removeAllListeners('warning');
    process.on('warning', (w) => {
      if (w.name !== 'TimeoutOverflowWarning') process.stderr.write(`${w.stack ?? w}\n`);
    });
    const out = await runScenario(job);
    process.stdout.write(`${JSON.stringify(out)}\n`);
    process.exit(0);
  }
  const layers = layeredGate() !== undefined;
  if (!layers)
    process.stderr.write(
      'bench/core/login: this build of @portcullis/core has no account layers: (b) is left out\n',
    );
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    rounds: ROUNDS,
    processes: PROCESSES,
    collectBeforeSamples: COLLECT,
    timings: [],
  };
  for (const id of selectedJobs()) {
    process.stderr.write(`bench/core/login: ${id}\n`);
    const outs = Array.from({ length: PROCESSES }, () => spawnJob(id));
    const rows = outs[0].rows.map(({ name }) => {
      const per = outs.map((o) => o.rows.find((r) => r.name === name).ns);
      return { name, ns: median(per), perProcess: per.map((x) => Number(x.toFixed(1))) };
    });
    const plain = rows.find((r) => r.name === 'portcullis auth gate').ns;
    const layered = rows.find((r) => r.name === 'portcullis auth gate + account layers')?.ns;
    console.log(`\n${outs[0].title}`);
    for (const r of rows) {
      const vsPlain = `  ${(r.ns / plain).toFixed(2)}× plain gate`;
      const vsLayered =
        layered === undefined ? '' : `  ${(r.ns / layered).toFixed(2)}× layered gate`;
      console.log(
        `  ${r.name.padEnd(58)} ${r.ns.toFixed(1).padStart(8)} ns${vsPlain}${vsLayered}   (${r.perProcess.join(' / ')})`,
      );
    }
    // The target compares the layered gate with the plain one: the same ratio of the floor
    // is what these answers' own work costs, before any of a library's duties.
    const floorOf = (name) => rows.find((r) => r.name === `hand-written Map floor, ${name}`)?.ns;
    const [everyLayer, clientOnly] = [floorOf('every layer'), floorOf('client only')];
    const floorRatio =
      everyLayer === undefined || clientOnly === undefined ? undefined : everyLayer / clientOnly;
    if (floorRatio !== undefined)
      console.log(`  floor, every layer / client only: ${floorRatio.toFixed(2)}×`);
    report.timings.push({ id, title: outs[0].title, rows, floorRatio });
  }
  if (process.env.BENCH_JSON)
    (await import('node:fs')).writeFileSync(
      process.env.BENCH_JSON,
      `${JSON.stringify(report, null, 2)}\n`,
    );
  process.exit(0);
}

main();
