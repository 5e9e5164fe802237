// Starts the example as `npm start` does (src/main.js: two server processes) against the test Redis
// (REDIS_URL, which the test setup sets; default 127.0.0.1:6379), with a prefix of its own. Never
// skips: without Redis it fails and says how to get one.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const EXAMPLE = fileURLToPath(new URL('..', import.meta.url));
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const PASSWORD = 'multi-process secret';
const prefix = `portcullis-example-test:${randomUUID().slice(0, 8)}:`;

interface Server {
  pid: number;
  url: string;
}

let redis: Redis | undefined;
let launcher: ChildProcess | undefined;
let servers: Record<string, Server> = {};

/**
 * Runs src/main.js in a process group of its own (as a shell runs `npm start`, so a Ctrl-C can be
 * sent to the whole group); `output` is stdout and stderr together, `errors` stderr alone.
 */
function launch(env: Record<string, string>): {
  child: ChildProcess;
  output: () => string;
  errors: () => string;
} {
  const child = spawn(process.execPath, ['src/main.js'], {
    cwd: EXAMPLE,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  let errors = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
    errors += chunk;
  });
  return { child, output: () => output, errors: () => errors };
}

/** Kills whatever is left of a launched group. */
function killGroup(child: ChildProcess | undefined): void {
  if (child?.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function started(child: ChildProcess, output: () => string): Promise<Record<string, Server>> {
  const found: Record<string, Server> = {};
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no servers within 30s:\n${output()}`)),
      30_000,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the launcher exited (${code}) before both servers were up:\n${output()}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /server ([AB]) \(pid (\d+)\) (http:\/\/\S+)/.exec(line);
      if (!match) return;
      found[match[1]!] = { pid: Number(match[2]), url: match[3]! };
      if (found['A'] && found['B']) {
        clearTimeout(timer);
        resolve(found);
      }
    });
  });
}

async function connectRedis(): Promise<Redis> {
  const client = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let lastError: Error | undefined;
  client.on('error', (error: Error) => {
    lastError = error;
  });
  try {
    await client.connect();
    return client;
  } catch (error) {
    client.disconnect();
    throw new Error(
      `Redis is not reachable at ${REDIS_URL} (${(lastError ?? (error as Error)).message}); this ` +
        'test needs it. The test setup starts a private one when redis-server is installed: apt-get install redis-server',
    );
  }
}

beforeAll(async () => {
  redis = await connectRedis();
  // The server processes load the packages' dist: build what is stale (the setup already has).
  execFileSync(
    process.execPath,
    [
      fileURLToPath(new URL('../../../scripts/build-if-stale.mjs', import.meta.url)),
      'core',
      'express',
      'redis',
    ],
    { stdio: 'inherit' },
  );
  const run = launch({ REDIS_URL, REDIS_PREFIX: prefix, LOGIN_PASSWORD: PASSWORD });
  launcher = run.child;
  servers = await started(run.child, run.output);
}, 120_000);

afterAll(async () => {
  killGroup(launcher);
  if (redis) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
});

const server = (name: 'A' | 'B'): Server => {
  const s = servers[name];
  if (!s) throw new Error(`server ${name} did not start`);
  return s;
};
const login = (name: 'A' | 'B', password: string) =>
  fetch(`${server(name).url}/login`, {
    method: 'POST',
    headers: { authorization: `Bearer ${password}` },
  });
const hello = (name: 'A' | 'B') => fetch(`${server(name).url}/api/hello`);

describe('two server processes sharing limits through Redis', () => {
  it('runs two distinct processes', () => {
    expect(server('A').pid).not.toBe(server('B').pid);
    expect(server('A').url).not.toBe(server('B').url);
  });

  it('refuses on server B a lockout taken through server A, even with the right password', async () => {
    const welcome = await login('B', PASSWORD);
    expect(welcome.status).toBe(200);
    expect(await welcome.json()).toEqual({ ok: true, server: 'B' });

    for (let i = 0; i < 5; i++) {
      const res = await login('A', 'wrong');
      expect(res.status).toBe(401);
      expect(res.headers.get('x-served-by')).toBe('A');
    }

    const refused = await login('B', PASSWORD);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-served-by')).toBe('B');
    expect(refused.headers.get('retry-after')).toMatch(/^(59|60)$/);
    const body = (await refused.json()) as { retryAfterMs: number };
    expect(body).toMatchObject({
      code: 'INVALID_REQUEST',
      retryable: true,
      details: { code: 'AUTH_RATE_LIMITED', recommendedNextStep: 'wait_then_retry' },
    });
    expect(body.retryAfterMs).toBeGreaterThan(55_000);
    expect(body.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect((await login('A', PASSWORD)).status).toBe(429);

    // The lockout lives in Redis, under this run's prefix, for the lockout's length.
    const ttl = await redis!.pttl(`${prefix}auth:password:127.0.0.1`);
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('spends one request budget across both servers', async () => {
    for (let i = 1; i <= 10; i++) {
      const name = i % 2 ? 'A' : 'B';
      const res = await hello(name);
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"api";r=${10 - i};t=(59|60)$`));
      expect(await res.json()).toEqual({ hello: 'world', server: name, remaining: 10 - i });
    }
    for (const name of ['A', 'B'] as const) {
      const res = await hello(name);
      expect(res.status).toBe(429);
      expect(res.headers.get('x-served-by')).toBe(name);
      expect(((await res.json()) as { code: string }).code).toBe('RATE_LIMITED');
    }
  });

  it('stops both servers when the launcher is stopped', async () => {
    const child = launcher!;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    for (const { pid } of Object.values(servers)) expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('Ctrl-C', () => {
  it('stops both servers quietly: exit code 0, nothing on stderr', async () => {
    const run = launch({ REDIS_URL, REDIS_PREFIX: prefix });
    try {
      const both = await started(run.child, run.output);
      const exited = once(run.child, 'exit');
      // A terminal's Ctrl-C: SIGINT to every process of the foreground group at once.
      process.kill(-(run.child.pid as number), 'SIGINT');
      const [code, signal] = await exited;
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      for (const { pid } of Object.values(both)) {
        await expect
          .poll(() => {
            try {
              process.kill(pid, 0);
              return 'running';
            } catch {
              return 'gone';
            }
          })
          .toBe('gone');
      }
      // Give a late trace from a server the chance to arrive before checking.
      await new Promise((r) => setTimeout(r, 200));
      expect(run.errors()).toBe('');
    } finally {
      killGroup(run.child);
    }
  }, 60_000);
});

describe('without Redis', () => {
  it('refuses to start rather than run without shared limits', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const run = launch({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: prefix });
    const [code] = await once(run.child, 'exit');
    expect(code).toBe(1);
    expect(run.output()).toContain(
      `Redis unreachable at redis://127.0.0.1:${port}: connect ECONNREFUSED`,
    );
  }, 30_000);
});
