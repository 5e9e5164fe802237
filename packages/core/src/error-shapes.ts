/*
 * The one place that builds the error shapes clients see. The field order is part of the contract:
 * these objects are serialised byte for byte as docs/design.md#gateway-auth and #control-plane-quotas show them.
 */

/** A gateway error shape (WS frame, RPC error or HTTP JSON body). */
export interface ErrorShape {
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly details?: Readonly<Record<string, unknown>>;
}

/** Whole seconds for a `Retry-After` header: ceil, at least 1. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/** The lockout answer of gateway auth (docs/design.md#gateway-auth). */
export interface AuthRateLimitedError extends ErrorShape {
  readonly code: 'INVALID_REQUEST';
  readonly retryable: true;
  readonly retryAfterMs: number;
  readonly details: {
    readonly code: 'AUTH_RATE_LIMITED';
    readonly authReason: 'rate_limited';
    readonly recommendedNextStep: 'wait_then_retry';
  };
}

/**
 * The lockout answer of gateway auth, sent as a WS frame, an RPC error or (with 429 and
 * `Retry-After`) an HTTP JSON body.
 */
export function authRateLimitedError(retryAfterMs: number): AuthRateLimitedError {
  return {
    code: 'INVALID_REQUEST',
    message: 'unauthorized: too many failed authentication attempts (retry later)',
    retryable: true,
    retryAfterMs,
    details: {
      code: 'AUTH_RATE_LIMITED',
      authReason: 'rate_limited',
      recommendedNextStep: 'wait_then_retry',
    },
  };
}

/** The answer to missing or wrong credentials below the limit (sent with 401 over HTTP). */
export interface AuthFailedError extends ErrorShape {
  readonly code: 'INVALID_REQUEST';
  readonly retryable: false;
  readonly details: {
    readonly code: 'AUTH_MISSING' | 'AUTH_INVALID';
    readonly authReason: 'missing' | 'invalid';
  };
}

/** The ordinary "wrong (or missing) credentials" answer. */
export function authFailedError(reason: 'missing' | 'invalid'): AuthFailedError {
  return reason === 'missing'
    ? {
        code: 'INVALID_REQUEST',
        message: 'unauthorized: credentials required',
        retryable: false,
        details: { code: 'AUTH_MISSING', authReason: 'missing' },
      }
    : {
        code: 'INVALID_REQUEST',
        message: 'unauthorized: invalid credentials',
        retryable: false,
        details: { code: 'AUTH_INVALID', authReason: 'invalid' },
      };
}

/** The per-method quota answer of the control plane (docs/design.md#control-plane-quotas). */
export interface MethodRateLimitedError extends ErrorShape {
  readonly code: 'UNAVAILABLE';
  readonly retryable: true;
  readonly retryAfterMs: number;
  readonly details: { readonly method: string; readonly limit: string };
}

/**
 * The answer to a write method over its quota, e.g. `rate limit exceeded for config.patch; retry
 * after 35s` with `details.limit` `"30 per 60s"`. Seconds in the message are `ceil(retryAfterMs/1000)`.
 */
export function methodRateLimitedError(
  method: string,
  retryAfterMs: number,
  quota: { readonly limit: number; readonly windowMs: number },
): MethodRateLimitedError {
  return {
    code: 'UNAVAILABLE',
    message: `rate limit exceeded for ${method}; retry after ${Math.ceil(retryAfterMs / 1000)}s`,
    retryable: true,
    retryAfterMs,
    details: { method, limit: `${quota.limit} per ${quota.windowMs / 1000}s` },
  };
}

/** The exact message of the session-creation limit (docs/design.md#session-creation). */
export function sessionRateLimitMessage(method: string, retryAfterMs: number): string {
  return `ACP session creation rate limit exceeded for ${method}; retry after ${Math.ceil(retryAfterMs / 1000)}s.`;
}

/** The general request limiter's 429 body. */
export function requestRateLimitedError(retryAfterMs: number): ErrorShape {
  return {
    code: 'RATE_LIMITED',
    message: `too many requests; retry after ${retryAfterSeconds(retryAfterMs)}s`,
    retryable: true,
    retryAfterMs,
  };
}

/** The answer when the shared store is down and its policy is to refuse (sent with 503). */
export function storeUnavailableError(): ErrorShape {
  return { code: 'UNAVAILABLE', message: 'rate limiter unavailable; retry later', retryable: true };
}

/** The answer to a request an operator's deny rule matched (sent with 403; docs/design.md#access-lists). */
export interface AccessDeniedError extends ErrorShape {
  readonly code: 'ACCESS_DENIED';
  readonly details: { readonly reason: string };
}

/**
 * The deny answer: the operator's reason in the message and in `details.reason` (`''` for none); a
 * rule that ends in `retryAfterMs` is retryable after it, one that lasts until removed is not.
 */
export function accessDeniedError(reason: string, retryAfterMs: number): AccessDeniedError {
  return retryAfterMs > 0
    ? {
        code: 'ACCESS_DENIED',
        message: reason === '' ? 'access denied' : `access denied: ${reason}`,
        retryable: true,
        retryAfterMs,
        details: { reason },
      }
    : {
        code: 'ACCESS_DENIED',
        message: reason === '' ? 'access denied' : `access denied: ${reason}`,
        retryable: false,
        details: { reason },
      };
}
