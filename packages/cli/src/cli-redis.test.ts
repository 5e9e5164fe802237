// The `portcullis` binary (the built dist/esm/bin.js, spawned with node) against the Redis of the
// test setup (REDIS_URL), under a prefix of this run whose keys are deleted at the end (never
// FLUSH). Lockouts are seeded and checked in this process with createFailureLimiter over a
// RedisStore: what the CLI lists is what the limiter holds, what it unlocks can log in again, what
// it bans is refused. Every exit code and line is checked; a time left is checked against the
// limiter's own listings before and after the run.
import { randomBytes } from 'node:crypto';
import { createFailureLimiter, type FailureLimiter, type LockoutInfo } from '@portcullis/core';
import { createAuthGate } from '@portcullis/core/adapter';
import { RedisStore } from '@portcullis/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cells, expectedTable, portcullis, type Ran, secondsOf } from '../test/cli-process.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';

describe('portcullis against Redis', () => {
  const prefix = `cli-test-${randomBytes(4).toString('hex')}:`;
  let redis: Redis;
  let store: RedisStore;
  let auth: FailureLimiter;
  let subscriber: Redis;
  // Resets published by the CLI, as this process's store hears them (its table of lockouts seen
  // refuses until one arrives: a server needs `subscribe` for an unlock to reach it at once).
  const heard: string[] = [];
  let onHeard: (() => void) | undefined;
  /** Runs `run`, then waits until this process heard the reset of `key` it published. */
  const unlocked = async (key: string, run: () => Promise<Ran>) => {
    heard.length = 0;
    const result = await run();
    if (result.code !== 0) return result; // nothing to wait for: the test fails on it
    while (!heard.some((m) => m.endsWith(key)))
      await new Promise<void>((resolve) => {
        onHeard = resolve;
      });
    return result;
  };
  const target = () => ['--redis', REDIS_URL, '--prefix', prefix];
  const where = (scope?: string) =>
    `limiter auth, prefix ${prefix}${scope === undefined ? '' : `, scope ${scope}`}`;
  const lockOut = async (ip: string, scope?: string) => {
    for (let i = 0; i < 10; i++) await auth.recordFailure(ip, scope);
    expect((await auth.check(ip, scope)).reason).toBe('locked');
  };
  const redisNow = async () => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    subscriber = redis.duplicate();
    let subscribed: Promise<unknown> = Promise.resolve();
    store = new RedisStore({
      sendCommand: (args) => redis.call(args[0]!, ...args.slice(1)),
      prefix,
      subscribe: (channel, onMessage) => {
        subscriber.on('message', (from: string, message: string) => {
          if (from !== channel) return;
          onMessage(message);
          heard.push(message);
          onHeard?.();
        });
        subscribed = subscriber.subscribe(channel);
      },
    });
    await subscribed;
    auth = createFailureLimiter({ store });
  });

  afterAll(async () => {
    store?.close();
    subscriber?.disconnect();
    if (!redis) return;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    await redis.quit();
  });

  it('lists nothing while nothing is locked (exit 0)', async () => {
    expect(await portcullis('lockouts', ...target())).toEqual({
      code: 0,
      stdout: [`no lockouts in force (${where()})`],
      stderr: [],
    });
    expect(await portcullis('lockouts', '--json', ...target())).toEqual({
      code: 0,
      stdout: [],
      stderr: [],
    });
  });

  describe('lockouts', () => {
    let before: LockoutInfo[];
    let after: LockoutInfo[];
    const runs: Record<string, Ran> = {};

    beforeAll(async () => {
      await lockOut('198.51.100.7'); // client, 5 min
      await auth.ban('2001:db8:1:2::9', { scope: 'device-token', ms: 3_600_000 });
      await auth.ban('203.0.113.5', { ms: 172_800_000 });
      before = await auth.lockouts();
      runs['table'] = await portcullis('lockouts', ...target());
      runs['json'] = await portcullis('lockouts', '--json', ...target());
      runs['scope'] = await portcullis('lockouts', '--scope', 'device-token', ...target());
      runs['scope json'] = await portcullis(
        'lockouts',
        '--scope',
        'default',
        '--json',
        ...target(),
      );
      runs['limit'] = await portcullis('lockouts', '--limit', '2', ...target());
      runs['limit json'] = await portcullis('lockouts', '--limit', '1', '--json', ...target());
      after = await auth.lockouts();
    });

    afterAll(async () => {
      await auth.reset('198.51.100.7');
      await auth.reset('2001:db8:1:2::9', 'device-token');
      await auth.reset('203.0.113.5');
    });

    const WANTED: [string, string, string][] = [
      ['default', '198.51.100.7', 'client'],
      ['device-token', '2001:db8:1:2::/64', 'ban'],
      ['default', '203.0.113.5', 'ban'],
    ];

    it('the limiter holds the three, soonest end first', () => {
      for (const listed of [before, after])
        expect(listed.map((l) => [l.scope, l.key, l.layer])).toEqual(WANTED);
    });

    /** Checks a listed lockout's times against the limiter's listings before and after. */
    const checkTimes = (i: number, retryAfterMs: number, until: number) => {
      const b = before[i] as LockoutInfo;
      const a = after[i] as LockoutInfo;
      expect(retryAfterMs).toBeLessThanOrEqual(b.retryAfterMs);
      expect(retryAfterMs).toBeGreaterThanOrEqual(a.retryAfterMs);
      checkUntil(i, until);
    };
    // `until` is the end in the Redis clock; two listings put it within their own duration.
    const checkUntil = (i: number, until: number) => {
      const b = before[i] as LockoutInfo;
      const a = after[i] as LockoutInfo;
      expect(until).toBeGreaterThanOrEqual(Math.min(b.until, a.until) - 1000);
      expect(until).toBeLessThanOrEqual(Math.max(b.until, a.until) + 1000);
    };

    /** Checks a table run: its times, then every line, laid out from those cells. */
    const checkTable = (run: Ran, rows: number[]) => {
      const body = run.stdout.slice(1).map(cells);
      expect(body.length).toBe(rows.length);
      body.forEach((row, n) => {
        const i = rows[n] as number;
        expect(row.slice(0, 3)).toEqual(WANTED[i]);
        // The time left, in whole seconds rounded up, between the two listings' own.
        const seconds = secondsOf(row[3] as string);
        expect(seconds).toBeGreaterThanOrEqual(
          Math.ceil((after[i] as LockoutInfo).retryAfterMs / 1000),
        );
        expect(seconds).toBeLessThanOrEqual(
          Math.ceil((before[i] as LockoutInfo).retryAfterMs / 1000),
        );
        checkUntil(i, Date.parse(row[4] as string));
        expect(seconds).toBe(Math.ceil(seconds)); // whole seconds above one
        expect(row[4]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      });
      expect(run.stdout).toEqual(
        expectedTable([['SCOPE', 'KEY', 'LAYER', 'ENDS IN', 'UNTIL'], ...body]),
      );
    };

    it('prints a table with the time left and the end (exit 0)', () => {
      const run = runs['table']!;
      expect([run.code, run.stderr]).toEqual([0, []]);
      checkTable(run, [0, 1, 2]);
      const endsIn = run.stdout.slice(1).map((l) => cells(l)[3]);
      expect(endsIn[0]).toMatch(/^(4m [1-5]?\ds|5m)$/);
      expect(endsIn[1]).toMatch(/^(59m [1-5]?\ds|1h)$/);
      expect(endsIn[2]).toMatch(/^(1d 23h 59m [1-5]?\ds|2d)$/);
    });

    it('--json prints one LockoutInfo per line (exit 0)', () => {
      const run = runs['json']!;
      expect([run.code, run.stderr, run.stdout.length]).toEqual([0, [], 3]);
      run.stdout.forEach((line, i) => {
        const l = JSON.parse(line);
        expect(Object.keys(l)).toEqual(['scope', 'key', 'layer', 'until', 'retryAfterMs']);
        expect([l.scope, l.key, l.layer]).toEqual(WANTED[i]);
        checkTimes(i, l.retryAfterMs, l.until);
        expect(line).toBe(JSON.stringify({ ...l }));
      });
    });

    it('--scope lists that scope only (exit 0)', () => {
      checkTable(runs['scope']!, [1]);
      expect([runs['scope']!.code, runs['scope']!.stderr]).toEqual([0, []]);
      const run = runs['scope json']!;
      expect([run.code, run.stderr]).toEqual([0, []]);
      expect(run.stdout.map((line) => JSON.parse(line).key)).toEqual([
        '198.51.100.7',
        '203.0.113.5',
      ]);
    });

    it('--limit lists the soonest to end and says there may be more (exit 0)', () => {
      checkTable(runs['limit']!, [0, 1]);
      expect([runs['limit']!.code, runs['limit']!.stderr]).toEqual([
        0,
        ['note: the 2 soonest to end; there may be more (raise --limit)'],
      ]);
      const run = runs['limit json']!;
      expect([run.code, run.stderr]).toEqual([
        0,
        ['note: the 1 soonest to end; there may be more (raise --limit)'],
      ]);
      expect(run.stdout.map((line) => JSON.parse(line).key)).toEqual(['198.51.100.7']);
    });
  });

  it('unlock lifts an earned lockout: the client can log in again (exit 0)', async () => {
    await lockOut('198.51.100.20');
    expect(
      await unlocked(':default:198.51.100.20', () =>
        portcullis('unlock', '198.51.100.20', ...target()),
      ),
    ).toEqual({
      code: 0,
      stdout: [`unlocked 198.51.100.20 (${where('default')})`],
      stderr: [],
    });
    expect(await auth.check('198.51.100.20')).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 10,
      remaining: 10,
      retryAfterMs: 0,
      resetMs: 0,
      key: '198.51.100.20',
    });
    expect(await auth.lockouts()).toEqual([]);
  });

  it('unlock --scope --json lifts a ban of an IPv6 network (exit 0)', async () => {
    await auth.ban('2001:db8:5:6::1', { scope: 'device-token', ms: 60_000 });
    expect(
      await portcullis(
        'unlock',
        '2001:db8:5:6::77',
        '--scope',
        'device-token',
        '--json',
        ...target(),
      ),
    ).toEqual({
      code: 0,
      stdout: ['{"action":"unlock","scope":"device-token","key":"2001:db8:5:6::/64"}'],
      stderr: [],
    });
    expect((await auth.check('2001:db8:5:6::1', 'device-token')).reason).toBe('allowed');
    expect(await auth.lockouts()).toEqual([]);
  });

  it('ban --for 90s: listed with layer ban, refused for 90 s (exit 0)', async () => {
    const start = await redisNow();
    expect(await portcullis('ban', '198.51.100.30', '--for', '90s', ...target())).toEqual({
      code: 0,
      stdout: [`banned 198.51.100.30 for 1m 30s (${where('default')})`],
      stderr: [],
    });
    const refused = await auth.check('198.51.100.30');
    const elapsed = (await redisNow()) - start;
    expect({ ...refused, retryAfterMs: 0, resetMs: 0 }).toEqual({
      allowed: false,
      reason: 'locked',
      limit: 10,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 0,
      key: '198.51.100.30',
    });
    expect(refused.retryAfterMs).toBeLessThanOrEqual(90_000);
    expect(refused.retryAfterMs).toBeGreaterThanOrEqual(90_000 - elapsed);
    const [listed] = await auth.lockouts();
    expect([listed?.scope, listed?.key, listed?.layer]).toEqual([
      'default',
      '198.51.100.30',
      'ban',
    ]);
    const json = await portcullis('lockouts', '--json', ...target());
    expect(json.stdout.map((line) => JSON.parse(line).layer)).toEqual(['ban']);
    await auth.reset('198.51.100.30');
  });

  it('ban --json: the ban as JSON; a longer lockout in force is kept (exit 0)', async () => {
    expect(
      await portcullis(
        'ban',
        '2001:db8:7:8::1',
        '--for',
        '15m',
        '--scope',
        'device-token',
        '--json',
        ...target(),
      ),
    ).toEqual({
      code: 0,
      stdout: [
        '{"action":"ban","scope":"device-token","key":"2001:db8:7:8::/64","ms":900000,"retryAfterMs":900000}',
      ],
      stderr: [],
    });
    await lockOut('198.51.100.31'); // 5 min
    const run = await portcullis('ban', '198.51.100.31', '--for', '1m', ...target());
    expect([run.code, run.stderr, run.stdout.length]).toEqual([0, [], 1]);
    expect(run.stdout[0]).toMatch(
      new RegExp(
        `^banned 198\\.51\\.100\\.31 for (4m [1-5]?\\ds|5m) \\(${where('default').replace(/[.]/g, '\\.')}\\): a longer lockout was already in force$`,
      ),
    );
    await auth.reset('2001:db8:7:8::1', 'device-token');
    await auth.reset('198.51.100.31');
  });

  it('--name lists and unlocks that limiter only (exit 0)', async () => {
    const admin = createFailureLimiter({ store, name: 'admin' });
    await admin.ban('198.51.100.40', { ms: 60_000 });
    const named = await portcullis('lockouts', '--name', 'admin', '--json', ...target());
    expect([
      named.code,
      named.stderr,
      named.stdout.map((line) => {
        const l = JSON.parse(line);
        return [l.scope, l.key, l.layer];
      }),
    ]).toEqual([0, [], [['default', '198.51.100.40', 'ban']]]);
    expect(await portcullis('lockouts', ...target())).toEqual({
      code: 0,
      stdout: [`no lockouts in force (${where()})`],
      stderr: [],
    });
    expect(
      await unlocked(':default:198.51.100.40', () =>
        portcullis('unlock', '198.51.100.40', '--name', 'admin', ...target()),
      ),
    ).toEqual({
      code: 0,
      stdout: [`unlocked 198.51.100.40 (limiter admin, prefix ${prefix}, scope default)`],
      stderr: [],
    });
    expect((await admin.check('198.51.100.40')).reason).toBe('allowed');
  });

  it("--name auth-ipv6-48 lists and unlocks an IPv6 network's lockout (exit 0)", async () => {
    // The auth gate's ipv6Networks budgets are failure limiters named <name>-ipv6-<prefix>, keyed
    // by the network as ipv6Networks spells it: 6 failures from 6 clients of a /48 lock it out.
    const gate = createAuthGate(
      { store, ipv6Networks: [{ prefix: 48, factor: 2 }], maxAttempts: 3 },
      { where: 'cli test', needsVerify: false },
    );
    const raw = (i: number) => ({ socket: { remoteAddress: `2001:db8:7:${i}::1` }, headers: {} });
    for (let i = 0; i < 6; i++) await gate.decide(raw(i), 'invalid');
    const refused = await gate.decide(raw(9), 'invalid');
    expect([refused.ok, refused.decision?.key]).toEqual([false, '2001:db8:7::/48']);
    const listed = await portcullis('lockouts', '--name', 'auth-ipv6-48', '--json', ...target());
    expect([
      listed.code,
      listed.stdout.map((line) => {
        const l = JSON.parse(line);
        return [l.scope, l.key, l.layer];
      }),
    ]).toEqual([0, [['default', '2001:db8:7::/48', 'client']]]);
    expect(
      await unlocked(':default:2001:db8:7::/48', () =>
        portcullis('unlock', '2001:db8:7::/48', '--name', 'auth-ipv6-48', ...target()),
      ),
    ).toEqual({
      code: 0,
      stdout: [`unlocked 2001:db8:7::/48 (limiter auth-ipv6-48, prefix ${prefix}, scope default)`],
      stderr: [],
    });
    expect((await gate.decide(raw(9), 'ok')).ok).toBe(true);
    await gate.close();
  });

  it('a key with terminal controls is shown escaped in the table, as JSON escapes it (exit 0)', async () => {
    await auth.ban('evil\u001b[2J\u202e', { ms: 60_000 });
    const table = await portcullis('lockouts', ...target());
    expect([table.code, table.stderr, table.stdout.map((l) => cells(l).slice(0, 3))]).toEqual([
      0,
      [],
      [
        ['SCOPE', 'KEY', 'LAYER'],
        ['default', 'evil\\x1b[2J\\u202e', 'ban'],
      ],
    ]);
    const json = await portcullis('lockouts', '--json', ...target());
    expect([json.code, json.stderr, json.stdout.length]).toEqual([0, [], 1]);
    expect(json.stdout[0]).toContain('"key":"evil\\u001b[2J\u202e"');
    expect(JSON.parse(json.stdout[0] as string).key).toBe('evil\u001b[2J\u202e');
    await auth.reset('evil\u001b[2J\u202e');
  });
});
