import type { Clock, MemoryStore } from '@portcullis/core';
import type { LocalDeny } from './local-deny.js';
import type { OnError } from './options.js';
import type { Outage } from './outage.js';
import type { ScriptArgs } from './script-args.js';
import type { SeenLockouts } from './seen-lockouts.js';
import type { Transport } from './transport.js';

/**
 * What every part of a `RedisStore` reads: its settings, the transport, and the state that more
 * than one part keeps (the outage, the lockouts seen, the local deny table, the fallback store).
 * One object, made once by the store, so that a part's constructor names only what is its own.
 */
export interface Shared {
  /** The key prefix. */
  readonly prefix: string;
  /** `onError`: who decides while Redis fails. */
  readonly policy: OnError;
  /** Times outages, probes and the lockouts seen. */
  readonly clock: Clock;
  /** The test-only clock whose time goes to the script; undefined = Redis `TIME`. */
  readonly scriptClock: Clock | undefined;
  readonly transport: Transport;
  readonly args: ScriptArgs;
  /** Whether Redis is down, the probe that asks, and the log lines of an outage. */
  readonly outage: Outage;
  /**
   * Lockouts this process has seen, from Redis replies or started by the fallback, keyed like the
   * store: each refuses until it ends, whatever Redis says later. At most `fallback.maxEntries`.
   */
  readonly seen: SeenLockouts;
  /** Refusals answered locally (undefined: `localDeny: false`). */
  readonly deny: LocalDeny | undefined;
  /** The fallback store: it decides during an outage under `onError: 'fallback'`. */
  readonly local: MemoryStore;
  /**
   * Bumped by every reset, refund and invalidation this process sees: a reply to a call sent
   * before one of them may predate it, so it teaches the deny table nothing.
   */
  epoch: number;
  /** Set by `close()`: nothing is started any more (probes, write-backs, subscriptions). */
  closed: boolean;
}
