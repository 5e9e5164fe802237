import type { ErrorShape } from '@portcullis/core';
import { isErrorShape } from './errors.js';
import { INVALID_METHOD } from './method-name.js';

/** A JSON-RPC 2.0 request id (`null` when the request's id could not be read). */
export type JsonRpcId = string | number | null;

/**
 * The JSON-RPC 2.0 error codes Portcullis answers with, all in the implementation-defined server
 * error range −32000..−32099 except `invalidRequest` and `invalidParams` (the standard −32600 and
 * −32602).
 */
export const jsonRpcErrorCodes = Object.freeze({
  /** −32029: a quota or rate limit refused the call (`UNAVAILABLE` with `retryAfterMs`, `RATE_LIMITED`). */
  rateLimited: -32029,
  /** −32001: authentication failed or is locked out (`details.code` `AUTH_*`). */
  unauthorized: -32001,
  /** −32003: the limiter's shared store is down and its policy is to refuse. */
  unavailable: -32003,
  /** −32600: a method name that is not usable (not a string, empty, too long, control characters). */
  invalidRequest: -32600,
  /** −32602: other `INVALID_REQUEST` shapes, e.g. bad `gateway.restart.request` params. */
  invalidParams: -32602,
  /** −32000: any other shape. */
  serverError: -32000,
} as const);

/** The `error` member of a JSON-RPC 2.0 error response; `data` is the Portcullis shape. */
export interface JsonRpcErrorObject<Shape extends ErrorShape = ErrorShape> {
  /** One of {@link jsonRpcErrorCodes}. */
  readonly code: number;
  /** The shape's message, e.g. `rate limit exceeded for config.patch; retry after 50s`. */
  readonly message: string;
  /** The plain shape, exactly as docs/design.md#gateway-auth / 3.5 writes it. */
  readonly data: Shape;
}

/** A JSON-RPC 2.0 error response. */
export interface JsonRpcErrorResponse<Shape extends ErrorShape = ErrorShape> {
  /** Always `'2.0'`. */
  readonly jsonrpc: '2.0';
  /** The request's id. */
  readonly id: JsonRpcId;
  /** The error. */
  readonly error: JsonRpcErrorObject<Shape>;
}

/**
 * The JSON-RPC error code for a shape:
 * `details.code` `AUTH_*` → −32001; `details.code` `INVALID_METHOD` → −32600; `RATE_LIMITED`, or
 * `UNAVAILABLE` with `retryAfterMs` → −32029; `UNAVAILABLE` without `retryAfterMs` → −32003; other
 * `INVALID_REQUEST` → −32602; else −32000.
 */
export function jsonRpcErrorCode(shape: ErrorShape): number {
  const detailCode = (shape.details as { code?: unknown } | undefined)?.code;
  if (typeof detailCode === 'string' && detailCode.startsWith('AUTH_')) {
    return jsonRpcErrorCodes.unauthorized;
  }
  if (shape.code === 'INVALID_REQUEST' && detailCode === INVALID_METHOD) {
    return jsonRpcErrorCodes.invalidRequest;
  }
  switch (shape.code) {
    case 'RATE_LIMITED':
      return jsonRpcErrorCodes.rateLimited;
    case 'UNAVAILABLE':
      return typeof shape.retryAfterMs === 'number'
        ? jsonRpcErrorCodes.rateLimited
        : jsonRpcErrorCodes.unavailable;
    case 'INVALID_REQUEST':
      return jsonRpcErrorCodes.invalidParams;
    default:
      return jsonRpcErrorCodes.serverError;
  }
}

/**
 * Builds the JSON-RPC 2.0 error response for a Portcullis error shape — the per-method quota shape,
 * the auth lockout shape, any other `ErrorShape` — or for a thrown {@link PortcullisRpcError}
 * (its `shape` is used). The shape goes into `error.data` unchanged.
 * @param shapeOrError the shape, or an error carrying one in `shape`
 * @param id the request's id; anything but a string or a finite number (`undefined`, an object read
 *   off a hostile request, `NaN`) becomes `null`, as JSON-RPC answers a request whose id is unusable
 * @throws {TypeError} when given neither a shape nor an error carrying one
 * @example toJsonRpcError(err, 7)
 * // { jsonrpc: '2.0', id: 7, error: { code: -32029, message: 'rate limit exceeded for …', data: { code: 'UNAVAILABLE', … } } }
 */
export function toJsonRpcError<Shape extends ErrorShape>(
  shapeOrError: Shape | { readonly shape: Shape },
  id?: JsonRpcId,
): JsonRpcErrorResponse<Shape> {
  // An error carrying a shape looks like a shape itself (code, message, retryable): prefer `shape`.
  const carried = (shapeOrError as { shape?: unknown } | null)?.shape;
  const shape = carried !== undefined ? carried : shapeOrError;
  if (!isErrorShape(shape)) {
    throw new TypeError(
      'toJsonRpcError: expected an error shape ({ code, message, retryable, … }) or an error with a `shape`',
    );
  }
  return {
    jsonrpc: '2.0',
    id: typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null,
    error: { code: jsonRpcErrorCode(shape), message: shape.message, data: shape as Shape },
  };
}
