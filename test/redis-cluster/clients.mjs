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
 *   subscribe?: (channel: string, onMessage: (message: string) => void) => () => void,
 *   onReconnect(listener: () => void): void,
 *   close(): Promise<void>,
 * }} StoreClient
 */

/**
 * ioredis `Cluster` sends a command without a key (`WAIT`) to a random node. RedisStore names the
 * key whose write a `WAIT` waits for: a pipeline holding a command on that key goes to the key's
 * primary, on the connection that sent the write.
 * @param {import('ioredis').Cluster} cluster @param {string[]} args @param {string} key
 */
async function waitOn(cluster, args, key) {
  const results = await cluster
    .pipeline()
    .call('WAIT', /** @type {string} */ (args[1]), /** @type {string} */ (args[2]))
    .pttl(key)
    .exec();
  const [error, reached] = /** @type {[Error | null, unknown][]} */ (results)[0] ?? [null, null];
  if (error) throw error;
  return reached;
}

/**
 * A subscriber connection of its own for RedisStore's `subscribe` (packages/redis/README.md).
 * @param {import('ioredis').Redis | import('ioredis').Cluster} client
 * @returns {(channel: string, onMessage: (message: string) => void) => () => void}
 */
function subscriberOf(client) {
  return (channel, onMessage) => {
    const sub = client.duplicate();
    sub.on('error', () => {});
    sub.on('message', (/** @type {string} */ ch, /** @type {string} */ message) => {
      if (ch === channel) onMessage(message);
    });
    sub.subscribe(channel).catch(() => {});
    return () => sub.disconnect();
  };
}

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
      // node-redis sends WAIT to every primary (its command tips: all_shards, agg_min); the store's
      // WAIT is for one key's write, on that key's primary.
      sendCommand: (args, key) =>
        args[0] === 'WAIT' && key !== undefined
          ? cluster.getNodeClientForKey(key).then((node) => node.sendCommand(args))
          : cluster.sendCommand(key, false, args),
      getBuffer: async (key) =>
        /** @type {Buffer | null} */ (
          await cluster.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).get(key)
        ),
      // A node's client ready again (reconnected, or a node found after a failover).
      onReconnect: (listener) => {
        cluster.on('node-ready', listener);
      },
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
    sendCommand: (args, key) =>
      args[0] === 'WAIT' && key !== undefined
        ? waitOn(cluster, args, key)
        : cluster.call(/** @type {string} */ (args[0]), ...args.slice(1)),
    getBuffer: (key) => cluster.getBuffer(key),
    subscribe: subscriberOf(cluster),
    // A node left the pool (its primary may be failing over): the store's write-backs then go out,
    // and come back through its outage probe until the promoted replica takes them.
    onReconnect: (listener) => {
      cluster.on('-node', listener);
    },
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
    subscribe: subscriberOf(redis),
    // Connected again, to the primary the sentinels name now.
    onReconnect: (listener) => {
      redis.on('ready', listener);
    },
    close: async () => {
      redis.disconnect();
    },
  };
}
