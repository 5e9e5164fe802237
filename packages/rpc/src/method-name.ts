import { PortcullisRpcError } from './errors.js';

/**
 * The longest method name any wrapper accepts, in UTF-16 code units. Real RPC method names are a
 * few dozen characters; a longer one is junk, and would only make bucket keys and logs large.
 */
export const MAX_METHOD_LENGTH = 256;

/** `details.code` of the shape a wrapper refuses an unusable method name with. */
export const INVALID_METHOD = 'INVALID_METHOD';

/**
 * A control character (C0, DEL, C1) or a Unicode line/paragraph separator: what would let a name
 * break a log line or hide itself in one.
 */
export function isControl(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029;
}

/**
 * Why `method` is not a usable method name, or `undefined` when it is: a string of 1 to
 * {@link MAX_METHOD_LENGTH} characters without control characters. Anything else (an array such
 * as `["config.patch"]`, a number, an object, …) would reach a dispatcher that may coerce it into
 * a limited name the wrapper never counted.
 */
export function methodProblem(method: unknown): string | undefined {
  if (typeof method !== 'string') {
    const kind = method === null ? 'null' : Array.isArray(method) ? 'an array' : typeof method;
    return `method must be a string, got ${kind}`;
  }
  if (method.length === 0) return 'method must not be empty';
  if (method.length > MAX_METHOD_LENGTH) {
    return `method must be at most ${MAX_METHOD_LENGTH} characters`;
  }
  for (let i = 0; i < method.length; i++) {
    if (isControl(method.charCodeAt(i))) return 'method must not contain control characters';
  }
  return undefined;
}

/**
 * The refusal of an unusable method name: `{ code: 'INVALID_REQUEST', message: 'invalid request:
 * method must be a string, got an array', retryable: false, details: { code: 'INVALID_METHOD' } }`
 * (JSON-RPC −32600). The message never repeats the name itself.
 */
export function invalidMethodError(problem: string): PortcullisRpcError {
  return new PortcullisRpcError({
    code: 'INVALID_REQUEST',
    message: `invalid request: ${problem}`,
    retryable: false,
    details: { code: INVALID_METHOD },
  });
}

/** Throws {@link invalidMethodError} unless `method` is a usable method name. */
export function checkMethod(method: unknown): asserts method is string {
  const problem = methodProblem(method);
  if (problem !== undefined) throw invalidMethodError(problem);
}
