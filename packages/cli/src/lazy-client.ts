// The ioredis client (or Cluster) behind the command's store: made and connected at the first
// command sent, given up on at the first refused or lost connection, and remembering why.
import { withoutUndefined } from '@portcullis/core/adapter';
import { Cluster, Redis } from 'ioredis';
import type { RedisTarget } from './redis-url.js';

/** How long connecting may take before it counts as a Redis failure. */
const CONNECT_TIMEOUT_MS = 2000;

/** A client that connects when first sent a command. */
export interface LazyClient {
  /** Sends one command (connecting first, once), as a `RedisStore`'s `sendCommand`. */
  send(args: string[]): Promise<unknown>;
  /** Why connecting or the connection failed, or `undefined` while it has not. */
  cause(): string | undefined;
  /** Resolves once every command sent so far has its answer, or after `withinMs`. */
  settled(withinMs: number): Promise<void>;
  /** Drops the connection, if one was made. */
  disconnect(): void;
}

/** The ioredis client (or Cluster) of `target`, made not to connect on its own nor retry. */
function createClient(target: RedisTarget, cluster: boolean): Redis | Cluster {
  const node = {
    ...withoutUndefined({
      connectTimeout: CONNECT_TIMEOUT_MS,
      username: target.username,
      password: target.password,
    }),
    ...(target.tls ? { tls: {} } : {}),
  };
  return cluster
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
}

/** The client of `target`; nothing connects until the first {@link LazyClient.send}. */
export function lazyClient(target: RedisTarget, cluster: boolean): LazyClient {
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
    const connecting = createClient(target, cluster);
    client = connecting;
    connecting.on('error', noteCause);
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
  return {
    send(args) {
      const sent = connect().then(() => client!.call(args[0]!, ...args.slice(1)));
      inFlight.add(sent);
      const done = () => inFlight.delete(sent);
      sent.then(done, done);
      return sent;
    },
    cause: () => cause,
    async settled(withinMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, withinMs);
      });
      const drained = (async () => {
        // An answer may send the next command (SADD, then PEXPIRE).
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      })();
      await Promise.race([drained, late]);
      clearTimeout(timer);
    },
    disconnect() {
      client?.disconnect();
    },
  };
}
