// The RedisStore over the command's Redis client (lazy-client.ts) and the failure limiter the
// command acts on; and what went wrong with Redis, if anything did.
import {
  type AccessList,
  createAccessList,
  createFailureLimiter,
  type FailureLimiter,
} from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { lazyClient } from './lazy-client.js';
import type { RedisTarget } from './redis-url.js';

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
  /** The access list `list` over the same store (docs/design.md#access-lists), opened on first use. */
  access(list: string): AccessList;
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
  const client = lazyClient(place.target, place.cluster);
  let storeError: string | undefined;
  const store = new RedisStore({
    // Connects at the first command, so that bad options fail before anything is sent.
    sendCommand: (args) => client.send(args),
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
  let list: AccessList | undefined;
  return {
    limiter,
    access(name) {
      list ??= createAccessList({ store, name });
      return list;
    },
    failure() {
      const cause = client.cause();
      if (cause === undefined && !store.degraded && storeError === undefined) return undefined;
      return cause ?? storeError ?? 'Redis failed';
    },
    settled: () => client.settled(CALL_TIMEOUT_MS),
    close() {
      void list?.close();
      store.close();
      client.disconnect();
    },
  };
}
