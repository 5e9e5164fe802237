// One ioredis client (or Cluster), the RedisStore over it and the failure limiter the command acts
// on; and what went wrong with Redis, if anything did.
import { createFailureLimiter, type FailureLimiter } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { Cluster, Redis } from 'ioredis';
import type { RedisTarget } from './redis-url.js';

/** How long connecting may take before it counts as a Redis failure. */
const CONNECT_TIMEOUT_MS = 2000;
/** How long one store call may take (connecting included); a command makes one or two. */
const CALL_TIMEOUT_MS = 5000;

/** Where the limiter lives: the server, how to reach it, the store's prefix, the limiter's name. */
export interface Place {
  readonly target: RedisTarget;
  readonly cluster: boolean;
  readonly prefix: string;
  readonly name: string;
}

/** The limiter of `place`, and how to tell whether Redis failed under it. */
export interface Connection {
  readonly limiter: FailureLimiter;
  /** Why Redis failed since the connection opened, or `undefined` while it has not. */
  failure(): string | undefined;
  /**
   * Resolves once every command sent so far has its answer (at most the time one call may take):
   * the store sends some writes after a decision without awaiting them (a ban's entry in the
   * lockout index), and a process that exits first loses them.
   */
  settled(): Promise<void>;
  /** Closes the store and the client. */
  close(): void;
}

/**
 * Opens the limiter. Nothing connects until the limiter first sends a command, so that bad
 * options (the store's, the limiter's and the call's, thrown as `PortcullisConfigError`) are told
 * before Redis is involved. The client gives up on the first refused or lost connection: an operator's
 * command should fail at once, not retry for ever.
 */
export function open(place: Place): Connection {
  const { target } = place;
  const node = {
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.tls ? { tls: {} } : {}),
  };
  let storeError: string | undefined;
  // The first error names the cause (`connect ECONNREFUSED …`); what follows is its echo
  // (`Connection is closed.`).
  let cause: string | undefined;
  const noteCause = (error: unknown) => {
    cause ??= error instanceof Error ? error.message : String(error);
  };
  let client: Redis | Cluster | undefined;
  const inFlight = new Set<Promise<unknown>>();
  let ready: Promise<void> | undefined;
  const connect = (): Promise<void> => {
    if (ready !== undefined) return ready;
    client = place.cluster
      ? new Cluster([{ host: target.host, port: target.port }], {
          lazyConnect: true,
          clusterRetryStrategy: () => null,
          redisOptions: node,
        })
      : new Redis({
          ...node,
          host: target.host,
          port: target.port,
          db: target.db,
          lazyConnect: true,
          retryStrategy: () => null,
          maxRetriesPerRequest: 0,
        });
    client.on('error', noteCause);
    const connecting = client;
    // ioredis reports a failed SELECT (a database out of range) as an error event and connects
    // anyway, to database 0: nothing may be sent then.
    ready = connecting.connect().then(() => {
      if (cause === undefined) return;
      connecting.disconnect();
      throw new Error(cause);
    });
    ready.catch(noteCause);
    return ready;
  };
  const store = new RedisStore({
    // Connects at the first command, so that bad options fail before anything is sent.
    sendCommand: (args) => {
      const sent = connect().then(() => client!.call(args[0]!, ...args.slice(1)));
      inFlight.add(sent);
      const done = () => inFlight.delete(sent);
      sent.then(done, done);
      return sent;
    },
    prefix: place.prefix,
    // Refuse rather than decide in memory: an operator must learn that nothing reached Redis.
    onError: 'closed',
    timeoutMs: CALL_TIMEOUT_MS,
    // A short-lived process: every answer comes from Redis.
    localDeny: false,
    logger: {
      warn() {},
      error(fields: unknown, message?: string) {
        const err = (fields as { err?: unknown } | null)?.err;
        storeError ??= err instanceof Error ? err.message : (message ?? 'Redis failed');
      },
    },
  });
  let limiter: FailureLimiter;
  try {
    limiter = createFailureLimiter({ store, name: place.name });
  } catch (error) {
    store.close();
    throw error;
  }
  return {
    limiter,
    failure() {
      if (cause === undefined && !store.degraded && storeError === undefined) return undefined;
      return cause ?? storeError ?? 'Redis failed';
    },
    async settled() {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CALL_TIMEOUT_MS);
      });
      const drained = (async () => {
        // An answer may send the next command (SADD, then PEXPIRE).
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      })();
      await Promise.race([drained, late]);
      clearTimeout(timer);
    },
    close() {
      store.close();
      client?.disconnect();
    },
  };
}
