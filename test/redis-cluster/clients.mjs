// The cluster and Sentinel clients of the tests in test/redis-cluster, each reduced to the
// `sendCommand` RedisStore needs (the recipes of packages/redis/README.md, "Clients"), for the
// test files and for the child processes they fork (test/redis-cluster/fixtures).
import { Cluster, Redis } from 'ioredis';
import { createCluster, RESP_TYPES } from 'redis';

/**
 * A connected client.
 * @typedef {{
 *   name: string,
 *   sendCommand: (args: string[], key: string | undefined) => Promise<unknown>,
 *   getBuffer(key: string): Promise<Buffer | null>,
 *   close(): Promise<void>,
 * }} StoreClient
 */

/** @param {Promise<unknown>} promise @param {number} ms @param {string} what */
function withTimeout(promise, ms, what) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not connected within ${ms}ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Connects to a Redis Cluster through ioredis `Cluster` or node-redis `createCluster`.
 * ioredis routes `EVALSHA`/`EVAL` by their one key itself; node-redis is given the key.
 * @param {'ioredis' | 'node-redis'} kind
 * @param {{ host: string, port: number }[]} seeds
 * @returns {Promise<StoreClient>}
 */
export async function connectCluster(kind, seeds) {
  if (kind === 'node-redis') {
    const cluster = createCluster({
      rootNodes: seeds.map(({ host, port }) => ({ socket: { host, port } })),
      // A node that went away is reconnected every 100 ms, and the topology is refreshed 500 ms
      // after the first attempt (default 5 s): a failed primary's replica is found soon after its
      // promotion.
      defaults: { socket: { connectTimeout: 1000, reconnectStrategy: () => 100 } },
      topologyRefreshOnReconnectionAttemptStrategy: 500,
    });
    cluster.on('error', () => {});
    await withTimeout(cluster.connect(), 10_000, 'node-redis cluster');
    return {
      name: 'node-redis',
      sendCommand: (args, key) => cluster.sendCommand(key, false, args),
      getBuffer: async (key) =>
        /** @type {Buffer | null} */ (
          await cluster.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).get(key)
        ),
      close: async () => {
        cluster.destroy();
      },
    };
  }
  const cluster = new Cluster(seeds, {
    lazyConnect: true,
    redisOptions: { connectTimeout: 1000 },
  });
  cluster.on('error', () => {});
  cluster.on('node error', () => {});
  await withTimeout(cluster.connect(), 10_000, 'ioredis cluster');
  return {
    name: 'ioredis',
    sendCommand: (args) => cluster.call(/** @type {string} */ (args[0]), ...args.slice(1)),
    getBuffer: (key) => cluster.getBuffer(key),
    close: async () => {
      cluster.disconnect();
    },
  };
}

/**
 * Connects ioredis to the primary that `sentinels` name `name`, following failovers.
 * @param {{ host: string, port: number }[]} sentinels @param {string} name
 * @returns {Promise<StoreClient>}
 */
export async function connectSentinel(sentinels, name) {
  const redis = new Redis({
    sentinels,
    name,
    lazyConnect: true,
    connectTimeout: 1000,
    // Reconnect quickly: each attempt asks the sentinels where the primary is now.
    retryStrategy: () => 100,
    sentinelRetryStrategy: () => 100,
  });
  redis.on('error', () => {});
  await withTimeout(redis.connect(), 10_000, 'ioredis (sentinels)');
  return {
    name: 'ioredis (sentinels)',
    sendCommand: (args) => redis.call(/** @type {string} */ (args[0]), ...args.slice(1)),
    getBuffer: (key) => redis.getBuffer(key),
    close: async () => {
      redis.disconnect();
    },
  };
}
