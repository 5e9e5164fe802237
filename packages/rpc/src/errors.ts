import type {
  Decision,
  ErrorShape,
  MethodRateLimitedError as MethodRateLimitedShape,
} from '@portcullis/core';

/**
 * An RPC call refused by Portcullis, carrying the exact wire shape (docs/design.md#gateway-auth / 3.5) in `shape`.
 * `toJSON()` returns that plain shape, so `JSON.stringify(error)` — or a WebSocket frame built from
 * it — sends exactly the contract's object. Recognise it by `instanceof` or, across package copies,
 * with {@link isPortcullisRpcError}.
 */
export class PortcullisRpcError<Shape extends ErrorShape = ErrorShape> extends Error {
  /** The plain error shape to put on the wire (`error.data` in JSON-RPC, the frame's `error`). */
  readonly shape: Shape;
  /** The shape's code, e.g. `UNAVAILABLE`. */
  readonly code: Shape['code'];
  /** Whether the client may retry (`shape.retryable`). */
  readonly retryable: boolean;

  /**
   * @param shape the wire shape; the error's message is `shape.message`
   * @param options standard error options (`cause`)
   */
  constructor(shape: Shape, options?: ErrorOptions) {
    super(shape.message, options);
    this.name = 'PortcullisRpcError';
    this.shape = shape;
    this.code = shape.code;
    this.retryable = shape.retryable;
  }

  /** The plain shape (used by `JSON.stringify`). */
  toJSON(): Shape {
    return this.shape;
  }
}

/**
 * The rejection of a quota-wrapped call when a method's bucket is exhausted. `shape` is exactly
 * core's `methodRateLimitedError(method, retryAfterMs, { limit, windowMs })`:
 * `{ code: 'UNAVAILABLE', message: 'rate limit exceeded for config.patch; retry after 50s',
 * retryable: true, retryAfterMs: 50000, details: { method: 'config.patch', limit: '30 per 60s' } }`.
 */
export class MethodRateLimitedError extends PortcullisRpcError<MethodRateLimitedShape> {
  /** How long to wait before this method will be accepted again for this caller. */
  readonly retryAfterMs: number;
  /** The refused method. */
  readonly method: string;
  /** The bucket key (`method|deviceId|clientIp`), for logs; not part of the wire shape. */
  readonly key: string;
  /** The limiter's decision. */
  readonly decision: Decision;

  /**
   * @param shape the shape from `methodRateLimitedError`
   * @param key the bucket key
   * @param decision the refusing decision
   */
  constructor(shape: MethodRateLimitedShape, key: string, decision: Decision) {
    super(shape);
    this.name = 'MethodRateLimitedError';
    this.retryAfterMs = shape.retryAfterMs;
    this.method = shape.details.method;
    this.key = key;
    this.decision = decision;
  }
}

/** True for a well-formed error shape (`code` and `message` strings, `retryable` boolean). */
export function isErrorShape(value: unknown): value is ErrorShape {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['code'] === 'string' &&
    typeof v['message'] === 'string' &&
    typeof v['retryable'] === 'boolean'
  );
}

/**
 * True for a {@link PortcullisRpcError} — including one from another copy of this package (ESM and
 * CJS side by side): an `Error` whose `shape` is an error shape.
 */
export function isPortcullisRpcError(value: unknown): value is PortcullisRpcError {
  return (
    value instanceof PortcullisRpcError ||
    (value instanceof Error && isErrorShape((value as { shape?: unknown }).shape))
  );
}
