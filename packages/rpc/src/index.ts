/**
 * @portcullis/rpc — per-method quotas around any RPC dispatcher (docs/design.md#control-plane-quotas), the JSON-RPC 2.0
 * mapping of Portcullis error shapes, and the wiring of core's session-creation limiter and restart
 * scheduler (docs/design.md#session-creation).
 * @packageDocumentation
 */
export {
  controlPlaneWriteMethods,
  type MethodLimitedEvent,
  type MethodQuotaDispatcher,
  type MethodQuotaOptions,
  withMethodQuotas,
} from './method-quotas.js';
export {
  isErrorShape,
  isPortcullisRpcError,
  MethodRateLimitedError,
  PortcullisRpcError,
} from './errors.js';
export {
  type JsonRpcErrorObject,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  jsonRpcErrorCode,
  jsonRpcErrorCodes,
  toJsonRpcError,
} from './json-rpc.js';
export {
  type MethodIdentity,
  methodQuotaKey,
  UNKNOWN_DEVICE,
  UNKNOWN_IP,
} from './identity.js';
export {
  type SessionCreationDispatcher,
  type SessionCreationLimitOptions,
  sessionOpeningMethods,
  withSessionCreationLimit,
} from './session-creation.js';
export {
  DROPPED_REASONS_MARKER,
  type RestartReasons,
  type RestartRequestDispatcher,
  type RestartRequestOptions,
  type RestartRequestParams,
  withRestartRequests,
} from './restart.js';
export { INVALID_METHOD, MAX_METHOD_LENGTH, methodProblem } from './method-name.js';
export type { Dispatcher, Wrapped } from './types.js';
