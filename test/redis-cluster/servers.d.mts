// Types of servers.mjs (plain JavaScript, so that bench/redis/cluster.mjs can load it too).
import type { ChildProcess } from 'node:child_process';

export const HOST: '127.0.0.1';
export function missingBinaries(): string[];
export function freePorts(n: number): Promise<number[]>;
// biome-ignore lint/suspicious/noExplicitAny: a RESP reply is whatever the command returns
export function command(port: number, args: (string | number)[], timeoutMs?: number): Promise<any>;
export function info(port: number, section: string): Promise<Record<string, string>>;
export function until<T>(check: () => Promise<T>, ms: number, what: string): Promise<T>;
export function keySlot(key: string): number;
export function redisCli(args: string[], timeoutMs?: number): Promise<string>;

export interface ClusterNodeInfo {
  id: string;
  port: number;
  flags: string[];
  master: boolean;
  fail: boolean;
  masterId: string | undefined;
  connected: boolean;
  slots: [number, number][];
}

export interface Cluster {
  readonly dir: string;
  readonly ports: number[];
  readonly seeds: { host: string; port: number }[];
  alive(port: number): boolean;
  pid(port: number): number | undefined;
  nodes(port?: number): Promise<ClusterNodeInfo[]>;
  primaryOf(slot: number): Promise<number>;
  primaries(): Promise<number[]>;
  replicaOf(port: number): Promise<number>;
  idOf(port: number): Promise<string>;
  kill(port: number): Promise<void>;
  pause(port: number): void;
  resume(port: number): void;
  waitHealthy(ms?: number): Promise<void>;
  logs(lines?: number): string;
  stop(): Promise<void>;
}

export function startCluster(options?: {
  primaries?: number;
  replicas?: number;
  nodeTimeoutMs?: number;
  args?: string[];
}): Promise<Cluster>;

export interface SentinelGroup {
  readonly dir: string;
  readonly name: string;
  readonly sentinels: { host: string; port: number }[];
  readonly sentinelPorts: number[];
  readonly servers: number[];
  alive(port: number): boolean;
  primary(): Promise<number>;
  kill(port: number): Promise<void>;
  pause(port: number): void;
  resume(port: number): void;
  logs(lines?: number): string;
  stop(): Promise<void>;
}

export function startSentinelGroup(options?: {
  name?: string;
  downAfterMs?: number;
  failoverTimeoutMs?: number;
}): Promise<SentinelGroup>;

export type { ChildProcess };
