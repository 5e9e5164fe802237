// The `portcullis` binary as users run it: the built dist/esm/bin.js spawned with node. Here what
// needs no Redis: help, version, every bad usage (exit 2, told before anything is sent), and a
// Redis that is down (exit 1, the reason and the URL without its password). Every run's exit code
// and every line it prints are checked. cli-redis.test.ts runs the commands against Redis.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, closedPort, portcullis } from '../test/cli-process.js';

const REDIS_URL = process.env['REDIS_URL'] || 'redis://127.0.0.1:6379';
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

const PROGRAM_HELP = [
  'Usage: portcullis <command> [options]',
  '',
  'See and act on the lockouts of a Portcullis failure limiter, and on its access',
  'lists, whose store is Redis (RedisStore).',
  '',
  'Options:',
  '  -V, --version               print the version',
  '  -h, --help                  show this help',
  '',
  'Commands:',
  '  lockouts [options]          list the lockouts in force, soonest end first',
  "  unlock [options] <subject>  lift a client's lockout (earned or banned) and",
  '                              forget its failures',
  '  ban [options] <subject>     lock a client out by hand: refused like an earned',
  '                              lockout, listed as layer ban',
  '  access [options]            list the allow and deny rules in force, denies',
  '                              first',
  '  allow [options] <subject>   let a subject through the rate limits (not the',
  '                              auth lockout), in every process',
  '  deny [options] <subject>    refuse every request of a subject (403 with the',
  '                              reason), in every process',
  '  unlist [options] <subject>  remove the allow or deny rule of a subject',
  '  help [command]              display help for command',
  '',
  'Exit codes: 0 done, 1 Redis failed (the reason is printed), 2 bad usage.',
  '',
  'Examples:',
  '  portcullis lockouts --redis redis://:secret@10.0.0.5:6379',
  '  portcullis unlock 203.0.113.7',
  '  portcullis ban 203.0.113.7 --for 1h --scope device-token',
  "  portcullis deny 198.51.100.0/24 --reason 'scraping' --for 7d",
  '  portcullis allow account:ops',
  '  portcullis access --json',
];

const TARGET_HELP = [
  '  --redis <url>      the Redis: redis://[user:password@]host:port[/db],',
  '                     rediss:// for TLS (default: "redis://127.0.0.1:6379", env:',
  '                     PORTCULLIS_REDIS_URL)',
  '  --cluster          the URL names one node of a Redis Cluster (like redis-cli',
  '                     -c)',
  `  --prefix <prefix>  the RedisStore's prefix (default: "portcullis:")`,
  `  --name <name>      the failure limiter's name (default: "auth")`,
  '  --json             JSON output: one object per line',
  '  -h, --help         show this help',
];

const HELP: Record<string, string[]> = {
  lockouts: [
    'Usage: portcullis lockouts [options]',
    '',
    'list the lockouts in force, soonest end first',
    '',
    'Options:',
    '  --scope <scope>    only this scope (default: every scope)',
    '  --limit <n>        list at most n lockouts (1 to 100000) (default: 1000)',
    ...TARGET_HELP,
  ],
  unlock: [
    'Usage: portcullis unlock [options] <subject>',
    '',
    "lift a client's lockout (earned or banned) and forget its failures",
    '',
    'Arguments:',
    '  subject            the client: an IP address, or a key as lockouts shows it',
    '',
    'Options:',
    '  --scope <scope>    the scope (credential class) (default: "default")',
    ...TARGET_HELP,
  ],
  ban: [
    'Usage: portcullis ban [options] <subject>',
    '',
    'lock a client out by hand: refused like an earned lockout, listed as layer ban',
    '',
    'Arguments:',
    '  subject            the client: an IP address, or a key as lockouts shows it',
    '',
    'Options:',
    '  --for <duration>   how long: 500ms, 90s, 15m, 1h, 2d, or combined largest',
    '                     first: 1h30m; at most 24d 20h',
    '  --scope <scope>    the scope (credential class) (default: "default")',
    ...TARGET_HELP,
  ],
};

describe('portcullis: help, version and bad usage (exit 0 and 2, before any Redis)', () => {
  it('is the bin package.json names', () => {
    expect(new URL(manifest.bin.portcullis, new URL('../', import.meta.url)).pathname).toBe(BIN);
  });

  it('--help prints the commands, the exit codes and examples (exit 0)', async () => {
    expect(await portcullis('--help')).toEqual({ code: 0, stdout: PROGRAM_HELP, stderr: [] });
  });

  it.each(Object.keys(HELP))(
    '%s --help and help <command> print its usage (exit 0)',
    async (name) => {
      const usage = HELP[name] as string[];
      expect(await portcullis(name, '--help')).toEqual({ code: 0, stdout: usage, stderr: [] });
      expect(await portcullis('help', name)).toEqual({ code: 0, stdout: usage, stderr: [] });
    },
  );

  it('--version prints the package version (exit 0)', async () => {
    expect(await portcullis('--version')).toEqual({
      code: 0,
      stdout: [manifest.version],
      stderr: [],
    });
  });

  it('no command: the usage on stderr (exit 2)', async () => {
    expect(await portcullis()).toEqual({ code: 2, stdout: [], stderr: PROGRAM_HELP });
  });

  it('an unknown command: the error, then the usage (exit 2)', async () => {
    expect(await portcullis('unban', '198.51.100.7')).toEqual({
      code: 2,
      stdout: [],
      stderr: ["error: unknown command 'unban'", '(Did you mean ban?)', '', ...PROGRAM_HELP],
    });
  });

  // Each against a closed port: bad usage is told before anything is sent.
  const RANGE = 'must be an integer from 1 to 2147483647';
  it.each([
    [['ban', '198.51.100.7'], 'ban', "error: required option '--for <duration>' not specified"],
    [
      ['ban', '198.51.100.7', '--for', '15x'],
      'ban',
      'error: --for 15x: expected a duration: 500ms, 90s, 15m, 1h, 2d, or combined largest first: 1h30m',
    ],
    [
      ['ban', '198.51.100.7', '--for', '90'],
      'ban',
      'error: --for 90: expected a duration: 500ms, 90s, 15m, 1h, 2d, or combined largest first: 1h30m',
    ],
    [
      ['ban', '198.51.100.7', '--for', '0s'],
      'ban',
      `error: --for 0s: ban: option "ms" ${RANGE}, got 0`,
    ],
    [
      ['ban', '198.51.100.7', '--for', '25d'],
      'ban',
      `error: --for 25d: ban: option "ms" ${RANGE}, got 2160000000`,
    ],
    [['unlock'], 'unlock', "error: missing required argument 'subject'"],
    [
      ['unlock', '198.51.100.7', '198.51.100.8'],
      'unlock',
      "error: too many arguments for 'unlock'. Expected 1 argument but got 2.",
    ],
    [
      ['unlock', '  '],
      'unlock',
      'error: <subject> is empty: give an IP address, or a key as lockouts shows it',
    ],
    [
      ['lockouts', '--limit', '0'],
      'lockouts',
      'error: --limit 0: lockouts: option "limit" must be an integer from 1 to 100000, got 0',
    ],
    [
      ['lockouts', '--limit', '100001'],
      'lockouts',
      'error: --limit 100001: lockouts: option "limit" must be an integer from 1 to 100000, got 100001',
    ],
    [
      ['lockouts', '--limit', 'ten'],
      'lockouts',
      "error: option '--limit <n>' argument 'ten' is invalid. Expected a whole number.",
    ],
    [['lockouts', '--every'], 'lockouts', "error: unknown option '--every'"],
    [
      ['lockouts', '--name', ''],
      'lockouts',
      `error: --name '': createFailureLimiter: option "name" must be a non-empty string, got ""`,
    ],
  ])('portcullis %j: the error, then the usage (exit 2)', async (args, command, error) => {
    const port = await closedPort();
    expect(await portcullis(...args, '--redis', `redis://127.0.0.1:${port}`)).toEqual({
      code: 2,
      stdout: [],
      stderr: [error, '', ...(HELP[command] as string[])],
    });
  });

  it.each([
    ['http://ops:s3cret@cache.example', '--redis must start with redis:// or rediss:// (TLS)'],
    ['redis://ops:s3cret@cache.example/x', '--redis: the path is a database number (/0)'],
    ['redis://ops:s3cret@cache example', '--redis must be a URL such as redis://127.0.0.1:6379'],
  ])('--redis %s: the error without the password, then the usage (exit 2)', async (url, error) => {
    expect(await portcullis('lockouts', '--redis', url)).toEqual({
      code: 2,
      stdout: [],
      stderr: [`error: ${error}`, '', ...(HELP['lockouts'] as string[])],
    });
  });
});

describe('portcullis: Redis down (exit 1, the reason and the URL without its password)', () => {
  it.each([
    [['lockouts']],
    [['lockouts', '--json']],
    [['unlock', '198.51.100.7']],
    [['ban', '198.51.100.7', '--for', '90s', '--json']],
  ])('portcullis %j against a closed port', async (args) => {
    const port = await closedPort();
    expect(await portcullis(...args, '--redis', `redis://ops:s3cret@127.0.0.1:${port}/3`)).toEqual({
      code: 1,
      stdout: [],
      stderr: [
        `error: Redis failed at redis://ops:***@127.0.0.1:${port}/3: connect ECONNREFUSED 127.0.0.1:${port}`,
      ],
    });
  });
});

describe('portcullis: Redis refuses (exit 1, nothing done)', () => {
  const { hostname, port } = new URL(REDIS_URL);
  const server = `${hostname}:${port || 6379}`;
  const prefix = `cli-refused-${randomBytes(4).toString('hex')}:`;
  const key = `${prefix}auth:default:198.51.100.99`;
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    await redis.set(key, 'kept', 'EX', 60);
  });
  afterAll(async () => {
    await redis?.del(key);
    await redis?.quit();
  });

  it('a wrong password: WRONGPASS, the URL without it', async () => {
    expect(
      await portcullis(
        'unlock',
        '198.51.100.99',
        '--prefix',
        prefix,
        '--redis',
        `redis://ops:wr0ng@${server}`,
      ),
    ).toEqual({
      code: 1,
      stdout: [],
      stderr: [
        `error: Redis failed at redis://ops:***@${server}: WRONGPASS invalid username-password pair or user is disabled.`,
      ],
    });
    expect(await redis.get(key)).toBe('kept');
  });

  it('a database out of range: refused, and nothing sent to database 0 (ioredis would fall back to it)', async () => {
    expect(
      await portcullis(
        'unlock',
        '198.51.100.99',
        '--prefix',
        prefix,
        '--redis',
        `redis://${server}/99`,
      ),
    ).toEqual({
      code: 1,
      stdout: [],
      stderr: [`error: Redis failed at redis://${server}/99: ERR DB index is out of range`],
    });
    expect(await redis.get(key)).toBe('kept');
  });
});
