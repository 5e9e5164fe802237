import { channel } from 'node:diagnostics_channel';
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

/** The diagnostics channels Portcullis publishes on (`node:diagnostics_channel`). */
export const channels = {
  /** A request was refused by a window limit (`reason: 'limited'`). */
  limited: channel('portcullis:limited'),
  /** A failure limiter started a lockout. */
  lockout: channel('portcullis:lockout'),
  /** A store full of lockouts refused a new key. */
  overflow: channel('portcullis:overflow'),
  /** A store failed; the decision says what was done instead. */
  storeError: channel('portcullis:store-error'),
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
