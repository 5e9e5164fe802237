// Shared by the @portcullis/redis tests (packages/redis/src/*.test.ts) and the cross-process
// suites in test/redis: real clients against a real Redis. Nothing here skips: a Redis that cannot
// be reached makes the calling test fail with a message saying how to start one.
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis as IORedis } from 'ioredis';
import { Valkey } from 'iovalkey';
import { createClient, RESP_TYPES } from 'redis';
import type { SendCommand, Subscribe } from '../../packages/redis/src/index.js';

/**
 * The shared test Redis: REDIS_URL, which the test setup (test/setup/services.ts) sets to the Redis
 * it found or started; 127.0.0.1:6379 when a test runs without it.
 */
const SHARED = new URL(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
/** Host of the shared test Redis. */
export const REDIS_HOST = SHARED.hostname.replace(/^\[|\]$/g, '');
/** Port of the shared test Redis. */
export const REDIS_PORT = Number(SHARED.port || 6379);

/** A connected client reduced to what RedisStore needs. */
export interface TestClient {
  readonly name: string;
  readonly sendCommand: SendCommand;
  /** `GET` as raw bytes (RedisStore values are binary). */
  getBuffer(key: string): Promise<Buffer | null>;
  close(): Promise<void>;
}

/** How to connect one of the three supported clients. */
export interface ClientKind {
  readonly name: 'ioredis' | 'node-redis' | 'iovalkey';
  connect(port?: number, options?: { reconnect?: boolean }): Promise<TestClient>;
}

const unreachable = (port: number, error: unknown): Error =>
  new Error(
    `Redis is not reachable on ${REDIS_HOST}:${port} (${error instanceof Error ? error.message : String(error)}). ` +
      'The test setup starts a private one when redis-server is installed: apt-get install redis-server',
  );

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms}ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function ioredisLike(
  name: 'ioredis' | 'iovalkey',
  Ctor: typeof IORedis | typeof Valkey,
): ClientKind {
  return {
    name,
    async connect(port = REDIS_PORT, { reconnect = false } = {}) {
      const client = new Ctor({
        host: REDIS_HOST,
        port,
        lazyConnect: true,
        maxRetriesPerRequest: reconnect ? 1 : 0,
        ...(reconnect ? { retryStrategy: () => 50 } : { retryStrategy: () => null }),
      });
      client.on('error', () => {});
      try {
        await withTimeout(client.connect(), 3000, `${name} connect`);
      } catch (error) {
        client.disconnect();
        throw unreachable(port, error);
      }
      return {
        name,
        sendCommand: (args) => client.call(args[0] as string, ...args.slice(1)),
        getBuffer: (key) => client.getBuffer(key),
        close: async () => {
          client.disconnect();
        },
      };
    },
  };
}

/** ioredis 5. */
export const ioredis = ioredisLike('ioredis', IORedis);
/** iovalkey (the Valkey fork of ioredis). */
export const iovalkey = ioredisLike('iovalkey', Valkey);

/** node-redis (the `redis` package). */
export const nodeRedis: ClientKind = {
  name: 'node-redis',
  async connect(port = REDIS_PORT, { reconnect = false } = {}) {
    const client = createClient({
      socket: { host: REDIS_HOST, port, reconnectStrategy: reconnect ? () => 50 : false },
    });
    client.on('error', () => {});
    try {
      await withTimeout(client.connect(), 3000, 'node-redis connect');
    } catch (error) {
      client.destroy();
      throw unreachable(port, error);
    }
    return {
      name: 'node-redis',
      sendCommand: (args) => client.sendCommand(args),
      getBuffer: async (key) => {
        const value = await client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).get(key);
        return value as Buffer | null;
      },
      close: async () => {
        client.destroy();
      },
    };
  },
};

/** All three clients, for `describe.each`-style loops. */
export const clientKinds: readonly ClientKind[] = [ioredis, nodeRedis, iovalkey];

/** A RedisStore value decoded: its kind letter and its numbers (see packages/redis/src/script.ts). */
export function decodeState(value: Buffer | null): { kind: string; numbers: number[] } | null {
  if (value === null) return null;
  const numbers: number[] = [];
  for (let at = 1; at + 8 <= value.length; at += 8) numbers.push(value.readDoubleBE(at));
  return { kind: String.fromCharCode(value[0] as number), numbers };
}

/** A prefix no other test uses. */
export function uniquePrefix(label = 'test'): string {
  return `portcullis-${label}:${randomUUID().slice(0, 8)}:`;
}

/** Deletes every key under `prefix` (tests clean up after themselves; TTLs would anyway). */
export async function deletePrefix(send: SendCommand, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const reply = (await send(
      ['SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', '1000'],
      undefined,
    )) as [string, string[]];
    cursor = String(reply[0]);
    if (reply[1].length > 0) await send(['DEL', ...reply[1]], undefined);
  } while (cursor !== '0');
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, REDIS_HOST, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/** A private `redis-server` a fault test can kill, pause and restart. */
export interface RedisServer {
  readonly port: number;
  /** SIGKILL, waits for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: nothing is persisted). */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing answers. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Kills it for good. */
  stop(): Promise<void>;
}

async function waitForPing(port: number): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      const out = execFileSync('redis-cli', ['-h', REDIS_HOST, '-p', String(port), 'PING'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      if (out.includes('PONG')) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline)
      throw new Error(`redis-server on port ${port} did not start within 5s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts `redis-server` on a free port of its own (no persistence). */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        REDIS_HOST,
        '--save',
        '',
        '--appendonly',
        'no',
        '--enable-debug-command',
        'local',
      ],
      { stdio: 'ignore' },
    );
    await waitForPing(port);
  };
  const kill = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGCONT');
    c.kill('SIGKILL');
    await exited;
  };
  await launch();
  return {
    port,
    kill,
    restart: launch,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    stop: kill,
  };
}

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Child processes load `@portcullis/core` and `@portcullis/redis` from their built `dist`. The test
 * setup has built what was stale; this checks again (a source may have changed since) and rebuilds
 * under the build lock (scripts/build-if-stale.mjs), so parallel test files never build at once.
 */
export function ensureBuilt(): void {
  execFileSync(process.execPath, [`${repo}/scripts/build-if-stale.mjs`, 'core', 'redis'], {
    cwd: repo,
    stdio: 'inherit',
  });
}

/** Absolute path of a fixture script in test/redis/fixtures. */
export function fixture(name: string): string {
  return join(repo, 'test', 'redis', 'fixtures', name);
}

/** A forked fixture process and the messages it sent. */
export interface Child {
  readonly process: ChildProcess;
  /** Resolves with the next IPC message (rejects if the process exits first or after `ms`). */
  next<T>(ms?: number): Promise<T>;
  /** Resolves when the process has exited (kills it after `ms`). */
  exited(ms?: number): Promise<number | null>;
}

/** Forks `test/redis/fixtures/<name>` with `args`; stderr is passed through for diagnosis. */
export function forkFixture(name: string, args: string[]): Child {
  const child = fork(fixture(name), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const queue: unknown[] = [];
  const waiters: ((m: unknown) => void)[] = [];
  child.on('message', (m) => {
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  return {
    process: child,
    next<T>(ms = 15_000): Promise<T> {
      if (queue.length > 0) return Promise.resolve(queue.shift() as T);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name}: no message within ${ms}ms`)), ms);
        const onExit = (code: number | null) =>
          reject(new Error(`${name} exited (${code}) before answering`));
        child.once('exit', onExit);
        waiters.push((m) => {
          clearTimeout(timer);
          child.off('exit', onExit);
          resolve(m as T);
        });
      });
    },
    exited(ms = 10_000): Promise<number | null> {
      if (child.exitCode !== null || child.signalCode !== null)
        return Promise.resolve(child.exitCode);
      return new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), ms);
        child.once('exit', (code) => {
          clearTimeout(timer);
          resolve(code);
        });
      });
    },
  };
}

/** Runs one command with `redis-cli` against `port` and returns its output (admin side channel). */
export function redisCli(port: number, ...args: string[]): string {
  return execFileSync('redis-cli', ['-h', REDIS_HOST, '-p', String(port), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Calls of a command since the server started, from `INFO commandstats`. */
export function commandCalls(port: number, command: string): number {
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(
    redisCli(port, 'INFO', 'commandstats'),
  );
  return match ? Number(match[1]) : 0;
}

/**
 * A subscriber connection of its own (ioredis, as packages/redis/README.md shows) for a store's
 * `subscribe`, counting the messages it hands over; `ready()` resolves once it listens.
 */
export async function subscriber(): Promise<{
  subscribe: Subscribe;
  received: () => number;
  ready: () => Promise<unknown>;
}> {
  const sub = new IORedis({ host: REDIS_HOST, port: REDIS_PORT, lazyConnect: true });
  sub.on('error', () => {});
  await sub.connect();
  let received = 0;
  let ready: Promise<unknown> = Promise.resolve();
  const subscribe: Subscribe = (channel, onMessage) => {
    sub.on('message', (ch: string, message: string) => {
      if (ch !== channel) return;
      received++;
      onMessage(message);
    });
    ready = sub.subscribe(channel);
    return () => sub.disconnect();
  };
  return { subscribe, received: () => received, ready: () => ready };
}

/** Waits (polling the event loop, at most ~1 s) until `sub` has handed over `n` messages. */
export async function delivered(sub: { received: () => number }, n = 1): Promise<void> {
  for (let i = 0; sub.received() < n; i++) {
    if (i > 1000) throw new Error('an invalidation never arrived');
    await new Promise((r) => setTimeout(r, 1));
  }
}

/**
 * A sendCommand whose `EVALSHA` replies wait while `hold()` is in force (Redis has answered; the
 * reply is on its way back) until `release()`: a reply that arrives late, without sleeping.
 */
export function holding(send: SendCommand): {
  send: SendCommand;
  hold: () => void;
  release: () => void;
} {
  let gate: Promise<void> | undefined;
  let open = () => {};
  const wrapped: SendCommand = (args, key) => {
    const reply = send(args, key);
    const g = gate;
    return g !== undefined && args[0] === 'EVALSHA'
      ? Promise.resolve(reply).then((r) => g.then(() => r))
      : reply;
  };
  return {
    send: wrapped,
    hold() {
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
    },
    release() {
      open();
      gate = undefined;
    },
  };
}
