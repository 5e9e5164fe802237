import type { Decision } from '../decision.js';
import {
  type ErrorShape,
  authFailedError,
  authRateLimitedError,
  requestRateLimitedError,
  retryAfterSeconds,
  storeUnavailableError,
} from '../error-shapes.js';
import { type GateResult, type HttpAnswer, jsonAnswer, textAnswer } from './answer.js';
import type { RequestResult } from './request-gate.js';

/** The answers of a failure gate (auth or webhook), built once where they do not vary. */
export interface GateRefusals {
  /** The refusal of a decision that did not allow: a lockout (429) or a failed store (503). */
  refuse(d: Decision): GateResult;
  /** A wrong (or, for webhooks, missing) credential, counted in `d`. */
  failed(d: Decision, reason: 'invalid' | 'missing'): GateResult;
}

/** The refusal of `d`: 503 for a store that failed closed, else the gate's 429. */
function refusal(
  d: Decision,
  unavailable: {
    readonly answer: HttpAnswer;
    readonly error: ErrorShape | undefined;
  },
  limited: (d: Decision) => {
    readonly answer: HttpAnswer;
    readonly error: ErrorShape | undefined;
  },
): GateResult {
  const { answer, error } = d.reason === 'store-error' ? unavailable : limited(d);
  return {
    ok: false,
    reason: d.reason === 'store-error' ? 'unavailable' : 'rate_limited',
    decision: d,
    answer,
    error,
  };
}

/** Freezes an error shape and its details, so a shared one cannot be changed by a caller. */
function frozen<T extends ErrorShape>(shape: T): T {
  if (shape.details !== undefined) Object.freeze(shape.details);
  return Object.freeze(shape);
}

/** The `Retry-After` header of a refusal (whole seconds, rounded up). */
const retryAfter = (d: Decision) => ({
  'Retry-After': String(retryAfterSeconds(d.retryAfterMs)),
});

/** An auth gate's answers (docs/design.md#gateway-auth), with the answer to missing credentials. */
export interface AuthRefusals extends GateRefusals {
  /** No credentials: 401, neither checked nor counted (one frozen result for every caller). */
  readonly missing: GateResult;
}

/**
 * The auth gate's JSON answers. The fixed ones are built once and frozen, because the same objects
 * go to every caller (a ws refusal hands them to user code); only a lockout's body depends on the
 * request.
 */
export function authRefusals(): AuthRefusals {
  const missingError = frozen(authFailedError('missing'));
  const invalidError = frozen(authFailedError('invalid'));
  const unavailableError = frozen(storeUnavailableError());
  const invalid = jsonAnswer(401, invalidError);
  const unavailable = {
    answer: jsonAnswer(503, unavailableError),
    error: unavailableError,
  };
  const limited = (d: Decision) => {
    const error = authRateLimitedError(d.retryAfterMs);
    return { answer: jsonAnswer(429, error, retryAfter(d)), error };
  };
  return {
    missing: Object.freeze({
      ok: false,
      reason: 'missing',
      decision: undefined,
      answer: jsonAnswer(401, missingError),
      error: missingError,
    }),
    refuse: (d) => refusal(d, unavailable, limited),
    failed: (d) => ({
      ok: false,
      reason: 'invalid',
      decision: d,
      answer: invalid,
      error: invalidError,
    }),
  };
}

/** The webhook gate's plain-text answers (docs/design.md#webhooks): no JSON error shape. */
export function webhookRefusals(): GateRefusals {
  const unauthorized = textAnswer(401, 'Unauthorized');
  const unavailable = {
    answer: textAnswer(503, 'Service Unavailable'),
    error: undefined,
  };
  const limited = (d: Decision) => ({
    answer: textAnswer(429, 'Too Many Requests', retryAfter(d)),
    error: undefined,
  });
  return {
    refuse: (d) => refusal(d, unavailable, limited),
    failed: (d, reason) => ({
      ok: false,
      reason,
      decision: d,
      answer: unauthorized,
      error: undefined,
    }),
  };
}

/**
 * The request limiter's result for `d` (docs/design.md#request-limiter): the counter headers on
 * every answer; a refusal is 429 with them (`Retry-After` included) or, for a store that failed
 * closed, 503 without them (they would advertise numbers nobody counted).
 */
export function requestResult(
  d: Decision,
  headers: Readonly<Record<string, string>>,
): RequestResult {
  if (d.allowed) return { ok: true, decision: d, headers, answer: undefined };
  const refusal =
    d.reason === 'store-error'
      ? jsonAnswer(503, storeUnavailableError())
      : jsonAnswer(429, requestRateLimitedError(d.retryAfterMs), headers);
  return { ok: false, decision: d, headers, answer: refusal };
}

/** The request limiter's result for a request a deny rule matched (docs/design.md#access-lists). */
export function requestDenied(d: Decision, answer: HttpAnswer): RequestResult {
  return { ok: false, decision: d, headers: answer.headers, answer };
}
