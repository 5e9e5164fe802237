// The WebSocket wire protocol, as far as both the connect handshake and the RPC answers need it:
// frames are JSON text, a request is {"type":"req","id","method","params"}, and every refusal goes
// back as {"type":"res","id","ok":false,"error":<shape>}. Kept apart so connect.js, rpc.js and
// sockets.js share one definition of a valid frame and of an invalid request.
import { PortcullisRpcError } from '@portcullis/rpc';

/** @import { ErrorShape } from '@portcullis/core' */
/** @import { RawData, WebSocket } from 'ws' */

/**
 * A plain object (not `null`, not an array): what every frame and params must be.
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
export function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The frame as JSON, or `undefined` for a binary frame or invalid JSON (both answered as invalid).
 * @param {RawData} data
 * @param {boolean} isBinary
 * @returns {unknown}
 */
export function parseFrame(data, isBinary) {
  if (isBinary) return undefined;
  try {
    return JSON.parse(String(data));
  } catch {
    return undefined;
  }
}

/**
 * A request frame: `type: "req"`, an id the answer can echo (a short string or a safe integer)
 * and a method name.
 * @param {unknown} frame
 */
export function isRequest(frame) {
  if (!isObject(frame)) return false;
  const id = frame['id'];
  return (
    frame['type'] === 'req' &&
    ((typeof id === 'string' && id.length > 0 && id.length <= 128) || Number.isSafeInteger(id)) &&
    typeof frame['method'] === 'string'
  );
}

/**
 * An `INVALID_REQUEST` error carrying its wire shape; thrown by handlers, `.shape` sent as is.
 * @param {string} message
 * @param {Record<string, unknown>} [details]
 */
export function invalidRequest(message, details) {
  return new PortcullisRpcError({
    code: 'INVALID_REQUEST',
    message,
    retryable: false,
    ...(details !== undefined && { details }),
  });
}

/**
 * Answers request `id` with an error.
 * @param {WebSocket} ws
 * @param {unknown} id
 * @param {ErrorShape} error
 */
export function sendError(ws, id, error) {
  ws.send(JSON.stringify({ type: 'res', id, ok: false, error }));
}
