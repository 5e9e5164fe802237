// Starts the example as `npm start` does (src/main.js: two server processes) against the shared
// Redis on 127.0.0.1:6379, with a prefix of its own. Never skips: without Redis it fails and says
// how to start one.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const EXAMPLE = fileURLToPath(new URL('..', import.meta.url));
const REDIS_URL = 'redis://127.0.0.1:6379';
const PASSWORD = 'multi-process secret';
const prefix = `portcullis-example-test:${randomUUID().slice(0, 8)}:`;

interface Server {
  pid: number;
  url: string;
}

let redis: Redis | undefined;
let launcher: ChildProcess | undefined;
let servers: Record<string, Server> = {};

/** Runs src/main.js; resolves with both servers once it has printed them, rejects if it exits. */
function launch(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['src/main.js'], {
    cwd: EXAMPLE,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  return { child, output: () => output };
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
        'test needs it. Start one: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no',
    );
  }
}

beforeAll(async () => {
  redis = await connectRedis();
  execFileSync(
    'flock',
    [
      '/tmp/portcullis-build.lock',
      process.execPath,
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
  if (launcher && launcher.exitCode === null && launcher.signalCode === null) {
    launcher.kill('SIGKILL');
    for (const { pid } of Object.values(servers)) process.kill(pid, 'SIGKILL');
  }
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
