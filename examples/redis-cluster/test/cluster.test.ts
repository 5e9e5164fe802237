// Starts the example as `npm start` does (src/main.js: a local Redis Cluster, then three gateway
// workers behind one port) and checks that the workers share lockouts and budgets through the
// cluster, and that stopping the launcher (or a Ctrl-C) stops the workers and the Redis servers.
// Needs redis-server and redis-cli: where they are missing the test says so loudly, and fails
// under CI=true.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const EXAMPLE = fileURLToPath(new URL('..', import.meta.url));
const PASSWORD = 'cluster secret';

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const missing = ['redis-server', 'redis-cli'].filter((c) => !onPath(c));

interface Started {
  nodes: string;
  redisPids: number[];
  dir: string;
  workerPids: number[];
  url: string;
}

/** Runs src/main.js in a process group of its own, as a shell runs `npm start`. */
function launch(env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['src/main.js'], {
    cwd: EXAMPLE,
    env: { ...process.env, PORT: '0', WORKERS: '3', LOGIN_PASSWORD: PASSWORD, ...env },
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
  const started = new Promise<Started>((resolve, reject) => {
    const found: Partial<Started> = {};
    const timer = setTimeout(() => reject(new Error(`not started within 60s:\n${output}`)), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the launcher exited (${code}) before the gateway was up:\n${output}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const redis = /^Redis Cluster: .* on (\S+) \(pids ([\d ]+);.* node files in (\S+)\)$/.exec(
        line,
      );
      if (redis) {
        found.nodes = redis[1]!;
        found.redisPids = redis[2]!.split(' ').map(Number);
        found.dir = redis[3]!;
      }
      const gateway =
        /^gateway: \d+ worker processes \(pids ([\d ]+)\) behind (http:\/\/\S+)$/.exec(line);
      if (gateway) {
        found.workerPids = gateway[1]!.split(' ').map(Number);
        found.url = gateway[2]!;
        clearTimeout(timer);
        resolve(found as Started);
      }
    });
  });
  return { child, started, output: () => output, errors: () => errors };
}

function killGroup(child: ChildProcess | undefined): void {
  if (child?.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const running = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** One request on a connection of its own, so the primary hands it to the next worker. */
function call(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * `describe(name, body)` where redis-server and redis-cli are installed; elsewhere one test that
 * says so loudly: it fails under CI=true, and is skipped with the message on stderr otherwise.
 */
function describeWithRedis(name: string, body: () => void): void {
  if (missing.length === 0) {
    describe(name, body);
    return;
  }
  const message =
    `${missing.join(' and ')} not found on the PATH, so the redis-cluster example cannot start ` +
    'its Redis Cluster. Install Redis: apt-get install redis-server (or brew install redis).';
  describe(name, () => {
    it(`needs ${missing.join(' and ')}`, (ctx) => {
      if (process.env['CI']) throw new Error(message);
      process.stderr.write(`\n[examples/redis-cluster] SKIPPED: ${message}\n\n`);
      ctx.skip(message);
    });
  });
}

describeWithRedis(
  'three gateway workers behind one port, sharing limits through a Redis Cluster',
  () => {
    let run: ReturnType<typeof launch> | undefined;
    let s: Started;
    let redis: Cluster | undefined;
    const prefix = 'portcullis-example-test:';

    beforeAll(async () => {
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
      run = launch({ REDIS_PREFIX: prefix });
      s = await run.started;
      redis = new Cluster(
        s.nodes.split(',').map((a) => ({ host: '127.0.0.1', port: Number(a.split(':')[1]) })),
        { lazyConnect: true },
      );
      await redis.connect();
    }, 120_000);

    afterAll(() => {
      redis?.disconnect();
      killGroup(run?.child);
    });

    it('starts six Redis servers and three workers, each request going to the next worker', async () => {
      expect(s.redisPids).toHaveLength(6);
      expect(s.workerPids).toHaveLength(3);
      expect(new Set(s.workerPids).size).toBe(3);
      const servedBy = new Set<string>();
      for (let i = 0; i < 6; i++)
        servedBy.add(String((await call(s.url, 'GET', '/')).headers['x-served-by']));
      expect(servedBy.size).toBe(3);
      expect([...servedBy].map((w) => Number(/pid (\d+)/.exec(w)?.[1])).sort()).toEqual(
        [...s.workerPids].sort(),
      );
    });

    it('a lockout taken through some workers is refused by every worker, even with the right password', async () => {
      expect(
        (await call(s.url, 'POST', '/login', { authorization: `Bearer ${PASSWORD}` })).status,
      ).toBe(200);
      const wrong = [];
      for (let i = 0; i < 5; i++)
        wrong.push((await call(s.url, 'POST', '/login', { authorization: 'Bearer guess' })).status);
      expect(wrong).toEqual([401, 401, 401, 401, 401]);
      const servedBy = new Set<string>();
      for (let i = 0; i < 3; i++) {
        const res = await call(s.url, 'POST', '/login', { authorization: `Bearer ${PASSWORD}` });
        expect(res.status).toBe(429);
        expect(res.headers['retry-after']).toMatch(/^(59|60)$/);
        servedBy.add(String(res.headers['x-served-by']));
      }
      expect(servedBy.size).toBe(3);
      // The lockout lives in the cluster, on the primary of its slot, for the lockout's length.
      const ttl = await redis!.pttl(`${prefix}auth:password:127.0.0.1`);
      expect(ttl).toBeGreaterThan(55_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
    });

    it('the workers spend one budget: 10 requests a minute in all, then 429 from each', async () => {
      for (let i = 1; i <= 10; i++) {
        const res = await call(s.url, 'GET', '/api/hello');
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit']).toMatch(new RegExp(`^"api";r=${10 - i};t=(59|60)$`));
      }
      const servedBy = new Set<string>();
      for (let i = 0; i < 3; i++) {
        const res = await call(s.url, 'GET', '/api/hello');
        expect(res.status).toBe(429);
        servedBy.add(String(res.headers['x-served-by']));
      }
      expect(servedBy.size).toBe(3);
      expect([
        (await call(s.url, 'POST', '/api/export')).status,
        (await call(s.url, 'POST', '/api/export')).status,
        (await call(s.url, 'POST', '/api/export')).status,
      ]).toEqual([200, 200, 429]);
    });

    it('stopping the launcher stops the workers and the Redis servers, and removes their files', async () => {
      const child = run!.child;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = await exited;
      expect(code).toBe(0);
      for (const pid of [...s.workerPids, ...s.redisPids])
        expect(running(pid), String(pid)).toBe(false);
      expect(existsSync(s.dir)).toBe(false);
    });
  },
);

describeWithRedis('Ctrl-C', () => {
  it('stops everything quietly: exit code 0, nothing on stderr', async () => {
    const run = launch();
    try {
      const s = await run.started;
      const exited = once(run.child, 'exit');
      // A terminal's Ctrl-C: SIGINT to every process of the foreground group at once.
      process.kill(-(run.child.pid as number), 'SIGINT');
      const [code, signal] = await exited;
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      for (const pid of [...s.workerPids, ...s.redisPids])
        await expect.poll(() => running(pid)).toBe(false);
      expect(existsSync(s.dir)).toBe(false);
      await new Promise((r) => setTimeout(r, 200));
      expect(run.errors()).toBe('');
    } finally {
      killGroup(run.child);
    }
  }, 90_000);
});
