// Types of clients.mjs (plain JavaScript, so that the forked fixtures can load it too).
export interface StoreClient {
  readonly name: string;
  sendCommand(args: string[], key: string | undefined): Promise<unknown>;
  getBuffer(key: string): Promise<Buffer | null>;
  /** A `subscribe` for RedisStore on a connection of its own (not for node-redis). */
  subscribe?: (channel: string, onMessage: (message: string) => void) => () => void;
  /** Calls `listener` when the client reconnects or follows a failover. */
  onReconnect(listener: () => void): void;
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
