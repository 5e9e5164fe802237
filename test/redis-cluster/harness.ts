// What the tests in test/redis-cluster share: the loud skip where Redis is not installed, the
// forked worker processes (fixtures/worker.mjs) that carry the traffic, and key picking by slot.
// The servers themselves come from servers.mjs, the clients from clients.mjs.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'vitest';
import type { Cluster } from './servers.mjs';
import { keySlot, missingBinaries } from './servers.mjs';

export { connectCluster, connectSentinel, type StoreClient } from './clients.mjs';
export * from './servers.mjs';

const missing = missingBinaries();

/**
 * `describe(name, body)` where `redis-server` and `redis-cli` are installed. Where they are not,
 * one test says so loudly instead: it fails under `CI=true` (CI must install them: see .ci/run)
 * and is skipped, with the message on stderr, elsewhere.
 */
export function describeWithRedis(name: string, body: () => void): void {
  if (missing.length === 0) {
    describe(name, body);
    return;
  }
  describe(name, () => {
    it(`needs ${missing.join(' and ')}`, (ctx) => {
      const message =
        `${missing.join(' and ')} not found on the PATH, so the Redis Cluster, failover, ` +
        'resharding and Sentinel tests cannot run. Install Redis: apt-get install redis-server ' +
        '(Debian, Ubuntu: redis-cli comes with it) or brew install redis (macOS).';
      if (process.env['CI']) throw new Error(message);
      process.stderr.write(`\n[test/redis-cluster] SKIPPED: ${message}\n\n`);
      ctx.skip(message);
    });
  });
}

/** The reasons of a traffic event, by code. */
export const REASONS = ['allowed', 'limited', 'locked', 'fallback', 'store-error', 'overflow'];

export type Call =
  | { t: 'consume'; limiter: string; key: string }
  | { t: 'fail'; subject: string }
  | { t: 'check'; subject: string };

/** A decision as a worker reports it. */
export type Compact = [
  allowed: 0 | 1,
  reason: string,
  remaining: number,
  retryAfterMs: number,
  lockoutStarted: 0 | 1,
];

/** One decision of steady traffic: when it started (ms since the epoch), how long it waited. */
export type TrafficEvent = [
  started: number,
  waited: number,
  call: number,
  allowed: 0 | 1,
  reason: number,
];

type WindowRuleOptions = {
  algorithm: 'fixed-window' | 'sliding-window' | 'token-bucket';
  limit: number;
  windowMs: number;
};

export interface WorkerConfig {
  connect:
    | { type: 'cluster'; kind: 'ioredis' | 'node-redis'; seeds: { host: string; port: number }[] }
    | { type: 'sentinel'; sentinels: { host: string; port: number }[]; name: string };
  prefix: string;
  onError: 'fallback' | 'open' | 'closed';
  timeoutMs: number;
  probeIntervalMs: number;
  failure: { maxAttempts: number; windowMs: number; lockoutMs: number };
  /** One window limiter per entry, named by its key. */
  windows: Record<string, WindowRuleOptions>;
}

const WORKER = fileURLToPath(new URL('./fixtures/worker.mjs', import.meta.url));

/** A forked worker process (fixtures/worker.mjs) with its own client and RedisStore. */
export class Worker {
  readonly label: string;
  readonly config: WorkerConfig;
  readonly #child: ChildProcess;
  readonly #pending = new Map<
    number,
    { resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }
  >();
  #nextId = 1;
  #exited = false;

  private constructor(label: string, config: WorkerConfig, child: ChildProcess) {
    this.label = label;
    this.config = config;
    this.#child = child;
    child.on('message', (m: Record<string, unknown>) => {
      const waiter = this.#pending.get(m['id'] as number);
      if (waiter === undefined) return;
      this.#pending.delete(m['id'] as number);
      if (typeof m['error'] === 'string')
        waiter.reject(new Error(`worker ${label}: ${m['error']}`));
      else waiter.resolve(m);
    });
    child.once('exit', (code, signal) => {
      this.#exited = true;
      for (const w of this.#pending.values())
        w.reject(new Error(`worker ${label} exited (${signal ?? code})`));
      this.#pending.clear();
    });
  }

  /** Forks a worker and resolves once its client is connected. */
  static async start(label: string, config: WorkerConfig): Promise<Worker> {
    const child = fork(WORKER, [label], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const worker = new Worker(label, config, child);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`worker ${label}: not connected within 20s`));
      }, 20_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`worker ${label} exited (${code}) before connecting`));
      });
      child.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      child.send(config);
    });
    return worker;
  }

  #request(message: Record<string, unknown>, ms = 60_000): Promise<Record<string, unknown>> {
    if (this.#exited) return Promise.reject(new Error(`worker ${this.label} has exited`));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`worker ${this.label}: no reply to ${String(message['op'])} in ${ms}ms`));
      }, ms);
      this.#pending.set(id, {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#child.send({ id, ...message });
    });
  }

  /** Runs `calls` at once (or one after another) and resolves to their decisions, in order. */
  async run(calls: Call[], sequential = false): Promise<Compact[]> {
    return (await this.#request({ op: 'run', calls, sequential }))['decisions'] as Compact[];
  }

  /** Repeats `call` until Redis refuses it (reason `limited` or `locked`); every decision. */
  async drain(call: Call): Promise<Compact[]> {
    return (await this.#request({ op: 'drain', call }))['decisions'] as Compact[];
  }

  /** Starts steady traffic: `lanes` loops over `calls`, each pausing `pauseMs` after a decision. */
  async start(calls: Call[], lanes: number, pauseMs: number): Promise<void> {
    await this.#request({ op: 'start', calls, lanes, pauseMs });
  }

  /** Decisions of the traffic so far, and how many since the last one `onError` made. */
  async status(): Promise<{ count: number; sinceDegraded: number }> {
    return (await this.#request({ op: 'status' })) as unknown as {
      count: number;
      sinceDegraded: number;
    };
  }

  /** Stops the traffic; resolves to every decision it made. */
  async stop(): Promise<TrafficEvent[]> {
    return (await this.#request({ op: 'stop' }))['events'] as TrafficEvent[];
  }

  /** Closes the worker's store and client, and waits for it to exit (kills it after 5 s). */
  async close(): Promise<void> {
    if (this.#exited) return;
    const exited = new Promise<void>((r) => this.#child.once('exit', () => r()));
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 5000);
    await this.#request({ op: 'close' }, 5000).catch(() => this.#child.kill('SIGKILL'));
    await exited;
    clearTimeout(timer);
  }
}

/** Starts workers in parallel; if one fails to start, the others are closed. */
export async function startWorkers(
  configs: { label: string; config: WorkerConfig }[],
): Promise<Worker[]> {
  const started = await Promise.allSettled(configs.map((c) => Worker.start(c.label, c.config)));
  const workers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await Promise.all(workers.map((w) => w.close()));
    throw (failed as PromiseRejectedResult).reason;
  }
  return workers;
}

/** Which primary (client port) serves each slot, from one `CLUSTER NODES` snapshot. */
export async function slotOwners(cluster: Cluster): Promise<(slot: number) => number> {
  const owners = new Int32Array(16384).fill(-1);
  for (const n of await cluster.nodes()) {
    if (!n.master || n.fail) continue;
    for (const [a, b] of n.slots) owners.fill(n.port, a, b + 1);
  }
  return (slot) => owners[slot] as number;
}

/**
 * Picks `count` names from `candidate(0)`, `candidate(1)`, … whose Redis key (`redisKey(name)`)
 * passes `wanted(slot)`, each in a slot of its own.
 */
export function pickKeys(
  count: number,
  candidate: (i: number) => string,
  redisKey: (name: string) => string,
  wanted: (slot: number) => boolean,
): string[] {
  const picked: string[] = [];
  const slots = new Set<number>();
  for (let i = 0; picked.length < count; i++) {
    if (i > 1_000_000) throw new Error('pickKeys: no such keys');
    const name = candidate(i);
    const slot = keySlot(redisKey(name));
    if (wanted(slot) && !slots.has(slot)) {
      picked.push(name);
      slots.add(slot);
    }
  }
  return picked;
}

/** Documentation addresses (RFC 5737, 198.51.100.0/24 then 203.0.113.0/24) as failure subjects. */
export const subject = (i: number): string =>
  i < 254 ? `198.51.100.${i + 1}` : `203.0.113.${((i - 254) % 254) + 1}`;

/** Redis key of a failure limiter's subject (`auth`, scope `default`). */
export const failureKey = (prefix: string, ip: string): string => `${prefix}auth:default:${ip}`;

/** Redis key of a window limiter's key. */
export const windowKey = (prefix: string, limiter: string, key: string): string =>
  `${prefix}${limiter}:${key}`;

/** Counts of `items` by `key`. */
export function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) {
    const k = key(item);
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return counts;
}
