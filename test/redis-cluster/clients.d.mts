// Types of clients.mjs (plain JavaScript, so that the forked fixtures can load it too).
export interface StoreClient {
  readonly name: string;
  sendCommand(args: string[], key: string | undefined): Promise<unknown>;
  getBuffer(key: string): Promise<Buffer | null>;
  close(): Promise<void>;
}

export function connectCluster(
  kind: 'ioredis' | 'node-redis',
  seeds: { host: string; port: number }[],
): Promise<StoreClient>;

export function connectSentinel(
  sentinels: { host: string; port: number }[],
  name: string,
): Promise<StoreClient>;
