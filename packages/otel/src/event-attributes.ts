import type { PortcullisEvent } from '@portcullis/core';

/** The failure-limiter layers a lockout may name (docs/design.md#defence-in-depth). */
const LAYERS = new Set(['client', 'pair', 'account', 'scope', 'spray', 'ban']);

/** A limiter name as an attribute value: configuration, but never trusted to be a string. */
export const nameOf = (value: unknown): string => (typeof value === 'string' ? value : 'unknown');

/** The `portcullis.layer` of a lockout: one of {@link LAYERS}, `client` when none is named. */
export function layerOf(layer: unknown): string {
  return typeof layer === 'string' && LAYERS.has(layer) ? layer : 'client';
}

/** Bounded `error.type` values of a failed store call. */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ERR_PORTCULLIS_REDIS_TIMEOUT') return 'timeout';
  if (code === 'ERR_PORTCULLIS_REDIS_REPLY') return 'invalid_reply';
  return 'error';
}

/** The subject of a lockout or reset event, as one string (held in memory, never an attribute). */
export function subjectOf(event: PortcullisEvent): string {
  return `${String(event.scope ?? 'default')}\u0000${String(event.decision?.key)}`;
}
