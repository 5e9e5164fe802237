// `portcullis access|allow|deny|unlist` (the built binary) against the Redis of the test setup,
// under a prefix of this run whose keys are deleted at the end. What the CLI sets, a server's
// access list over its own RedisStore enforces (heard through subscribe); every exit code and
// line is checked.
import { randomBytes } from 'node:crypto';
import { type AccessList, createAccessList } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectedTable, portcullis } from '../test/cli-process.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';

describe('portcullis access lists against Redis', () => {
  const prefix = `cli-access-${randomBytes(4).toString('hex')}:`;
  let redis: Redis;
  let subscriber: Redis;
  let store: RedisStore;
  let server: AccessList;
  const target = () => ['--redis', REDIS_URL, '--prefix', prefix];

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    subscriber = redis.duplicate();
    let subscribed: Promise<unknown> = Promise.resolve();
    store = new RedisStore({
      sendCommand: (args) => redis.call(args[0] as string, ...args.slice(1)),
      prefix,
      subscribe: (channel, onMessage) => {
        subscriber.on('message', (from: string, message: string) => {
          if (from === channel) onMessage(message);
        });
        subscribed = subscriber.subscribe(channel);
        return () => subscriber.disconnect();
      },
    });
    server = createAccessList({ store, refreshMs: 3_600_000 });
    await server.ready();
    await subscribed;
  });

  afterAll(async () => {
    await server?.close();
    store?.close();
    subscriber?.disconnect();
    if (!redis) return;
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('lists nothing at first (exit 0)', async () => {
    expect(await portcullis('access', ...target())).toEqual({
      code: 0,
      stdout: [`no access rules (list default, prefix ${prefix})`],
      stderr: [],
    });
    expect(await portcullis('access', '--json', ...target())).toEqual({
      code: 0,
      stdout: [],
      stderr: [],
    });
  });

  it('deny reaches the server at once; allow and unlist too', async () => {
    expect(
      await portcullis(
        'deny',
        '198.51.100.9/24',
        '--reason',
        'scraping',
        '--for',
        '2h',
        ...target(),
      ),
    ).toEqual({
      code: 0,
      stdout: ['denied ip:198.51.100.0/24 for 2h (list default)'],
      stderr: [],
    });
    await vi.waitFor(() =>
      expect(server.check({ ip: '198.51.100.77' })).toMatchObject({
        subject: 'ip:198.51.100.0/24',
        action: 'deny',
        reason: 'scraping',
      }),
    );
    expect(await portcullis('allow', 'account:ops', '--json', ...target())).toEqual({
      code: 0,
      stdout: [
        JSON.stringify({ subject: 'account:ops', action: 'allow', reason: '', until: null }),
      ],
      stderr: [],
    });
    await vi.waitFor(() => expect(server.check({ account: 'ops' })?.action).toBe('allow'));

    const listed = await portcullis('access', ...target());
    expect(listed.code).toBe(0);
    expect(listed.stdout[0]).toBe(
      expectedTable([
        ['ACTION', 'SUBJECT', 'REASON', 'ENDS IN'],
        ['deny', 'ip:198.51.100.0/24', 'scraping', listed.stdout[1]?.split(/ {2,}/)[3] ?? ''],
        ['allow', 'account:ops', '', 'never'],
      ])[0],
    );
    expect(listed.stdout.slice(1).map((l) => l.split(/ {2,}/).slice(0, 2))).toEqual([
      ['deny', 'ip:198.51.100.0/24'],
      ['allow', 'account:ops'],
    ]);
    expect(listed.stdout[1]?.split(/ {2,}/)[3]).toMatch(/^(2h|1h 59m( \d+s)?)$/);

    expect(await portcullis('unlist', '198.51.100.0/24', ...target())).toEqual({
      code: 0,
      stdout: ['removed the rule of 198.51.100.0/24 (list default)'],
      stderr: [],
    });
    await vi.waitFor(() => expect(server.check({ ip: '198.51.100.77' })).toBe(undefined));
    expect(await portcullis('unlist', '198.51.100.0/24', '--json', ...target())).toEqual({
      code: 0,
      stdout: [JSON.stringify({ action: 'unlist', subject: '198.51.100.0/24', removed: false })],
      stderr: [],
    });
  });

  it('another list name is another list', async () => {
    expect((await portcullis('deny', 'account:eve', '--list', 'partners', ...target())).code).toBe(
      0,
    );
    const other = await portcullis('access', '--json', '--list', 'partners', ...target());
    expect(other.stdout.map((l) => JSON.parse(l).subject)).toEqual(['account:eve']);
    expect(server.check({ account: 'eve' })).toBe(undefined);
  });

  it.each([
    [['deny', '10.0.0.1/33'], 'access list: "10.0.0.1/33" is not an IP address or CIDR network'],
    [['deny', 'account:'], 'access list: an account must be 1 to 256 characters'],
    [['allow', 'origin:nope'], 'access list: "nope" is not an origin'],
    [['deny', '10.0.0.1', '--for', 'soon'], '--for soon: expected a duration'],
    [['deny', '10.0.0.1', '--reason', 'a\u0007b'], '--reason'],
    [['deny', '10.0.0.1', '--list', 'a b'], 'option "name" must be a token'],
  ])('refuses %j as bad usage (exit 2), changing nothing', async (args, message) => {
    const ran = await portcullis(...args, ...target());
    expect(ran.code).toBe(2);
    expect(ran.stdout).toEqual([]);
    expect(ran.stderr[0]).toContain('error: ');
    expect(ran.stderr[0]).toContain(message);
    expect(await server.rules()).not.toContainEqual(
      expect.objectContaining({ subject: 'ip:10.0.0.1' }),
    );
  });

  it('a Redis that refuses the connection is exit 1 with the reason', async () => {
    const ran = await portcullis(
      'deny',
      '10.0.0.1',
      '--redis',
      'redis://127.0.0.1:1',
      '--prefix',
      prefix,
    );
    expect(ran).toEqual({
      code: 1,
      stdout: [],
      stderr: ['error: Redis failed at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1'],
    });
  });
});
