import { channel } from 'node:diagnostics_channel';
import { type Clock, systemClock } from './clock.js';
import type { Decision } from './decision.js';

/** A pino-compatible logger: `warn(obj, msg)` / `error(obj, msg)`; console works too. */
export interface Logger {
  /** Logs a warning: a lockout started, a probably-wrong setup. */
  warn(obj: object, msg?: string): void;
  /** Logs an error: the store failed. */
  error(obj: object, msg?: string): void;
}

/** The message published on every Portcullis diagnostics channel. */
export interface PortcullisEvent {
  /** The limiter's name (e.g. `auth`, `webhook`, `default`). */
  readonly limiter: string;
  /** The failure limiter's scope, when there is one. */
  readonly scope?: string;
  /** The decision that caused the event. */
  readonly decision: Decision;
  /** The store error, on `portcullis:store-error`. */
  readonly error?: unknown;
}

/** The message published on `portcullis:store-call`: one round trip of a shared store. */
export interface StoreCallEvent {
  /** Which store made the call (`'redis'`). */
  readonly store: string;
  /** How long the call took, timeout included, in milliseconds (fractional on the system clock). */
  readonly durationMs: number;
  /** Whether the call failed (an error reply, a malformed reply, no answer within the timeout). */
  readonly failed: boolean;
  /** The failure, when `failed`. */
  readonly error?: unknown;
}

/** The diagnostics channels Portcullis publishes on (`node:diagnostics_channel`). */
export const channels = {
  /** A request was refused by a window limit (`reason: 'limited'`). */
  limited: channel('portcullis:limited'),
  /** A failure limiter started a lockout. */
  lockout: channel('portcullis:lockout'),
  /** A store full of lockouts refused a new key. */
  overflow: channel('portcullis:overflow'),
  /**
   * A failure limiter's `reset` forgot a subject's failures and lifted its lockout, if any (an
   * operator's unlock); the decision is the fresh one `reset` returned. Only while someone
   * subscribes. A reset made by another process on a shared store is not published here.
   */
  reset: channel('portcullis:reset'),
  /** A store failed; the decision says what was done instead. */
  storeError: channel('portcullis:store-error'),
  /**
   * Every gatekeeping decision, whatever its reason (a window limiter's `consume`, a failure
   * limiter's `check`), in its final form (`dryRun` set in a dry run). Published only while
   * someone subscribes: nothing is built per decision otherwise.
   */
  decision: channel('portcullis:decision'),
  /** Every round trip of a shared store ({@link StoreCallEvent}), only while someone subscribes. */
  storeCall: channel('portcullis:store-call'),
} as const;

/** Publishes a decision on the channel matching its reason, only when someone listens. */
export function publishDecision(limiter: string, scope: string | undefined, d: Decision): void {
  const ch =
    d.reason === 'limited'
      ? channels.limited
      : d.reason === 'overflow'
        ? channels.overflow
        : d.reason === 'store-error' || d.reason === 'fallback'
          ? channels.storeError
          : undefined;
  if (ch?.hasSubscribers)
    ch.publish(scope === undefined ? { limiter, decision: d } : { limiter, scope, decision: d });
}

/** Publishes a final decision on `portcullis:decision` (callers check `hasSubscribers` first). */
export function publishDecided(limiter: string, scope: string | undefined, d: Decision): void {
  channels.decision.publish(
    scope === undefined ? { limiter, decision: d } : { limiter, scope, decision: d },
  );
}

/**
 * Publishes on `portcullis:store-call` how long `call` took and whether it failed, when someone
 * listens; returns `call` itself. The system clock's milliseconds are too coarse for a round trip
 * to a local Redis, so on it the duration comes from `performance.now()`.
 */
export function timeStoreCall<T>(store: string, clock: Clock, call: Promise<T>): Promise<T> {
  if (!channels.storeCall.hasSubscribers) return call;
  const now = clock === systemClock ? () => performance.now() : () => clock.now();
  const start = now();
  const done = (failed: boolean, error?: unknown) => {
    if (!channels.storeCall.hasSubscribers) return;
    const durationMs = Math.max(0, now() - start);
    channels.storeCall.publish(
      failed ? { store, durationMs, failed, error } : { store, durationMs, failed },
    );
  };
  call.then(
    () => done(false),
    (error: unknown) => done(true, error),
  );
  return call;
}
