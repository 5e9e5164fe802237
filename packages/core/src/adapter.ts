/**
 * @portcullis/core/adapter — what adapter and store authors need and users of Portcullis do not:
 * the request gates every adapter translates, the option checks that give every package the same
 * error codes, the promise helpers of the synchronous fast path, safe calls of user code, and the
 * Fetch API helpers. Nothing here is needed to use Portcullis; see the "Writing an adapter"
 * section of the package README.
 * @packageDocumentation
 */
export { systemTimers } from './clock.js';
export { WARNING_CODES, type WarningCode, type Warnings, warningsOption } from './warnings.js';
export { isPromise, type MaybePromise, mapMaybe } from './promise.js';
export {
  callSafely,
  HOOK_ERROR,
  type HookErrorFields,
  reportHookError,
  safeLogger,
} from './safe-call.js';
export { type WithoutUndefined, withoutUndefined } from './without-undefined.js';
export { sessionCreationLimiterSpec } from './session-creation.js';
export { windowLimiterSpec } from './window-limiter.js';
export { timeStoreCall } from './events.js';
export { keepShape } from './keep-shape.js';
export { byEnd } from './store.js';
export { batchCalls, callStore } from './store-batch.js';
export { LinkedDecision } from './decision.js';
export { type ClientResolver, createClientResolver } from './client.js';
export {
  type AuthFailedError,
  authFailedError,
  requestRateLimitedError,
  retryAfterSeconds,
} from './error-shapes.js';
export type { GateResult, HttpAnswer, RefusalReason } from './http/answer.js';
export type { AdapterOptionSpec, GateClientOptions } from './http/gate-options.js';
export {
  type AuthGate,
  type AuthGateOptions,
  type AuthGuardOptions,
  type AuthOutcome,
  createAuthGate,
  type GateSetup,
} from './http/auth-gate.js';
export {
  type AdapterRateLimitOptions,
  controlsOf,
  type GuardGate,
  guardMiddleware,
  type HttpIdiom,
  type LimitedHandler,
  type Middleware,
  type OnLimitedHook,
  onLimitedSpec,
  type RateLimitIdiom,
  rateLimitMiddleware,
} from './http/middleware.js';
export {
  answerResponse,
  clientAddressSpec,
  type FetchIdiom,
  type FetchMiddleware,
  fetchGuard,
  fetchRateLimit,
  type LimitedResponder,
  withResponseHeaders,
} from './http/fetch-middleware.js';
export {
  type ConcurrencyGate,
  type ConcurrencyGateOptions,
  type ConcurrencyResult,
  createConcurrencyGate,
} from './http/concurrency-gate.js';
export {
  type AdapterConcurrencyOptions,
  type ClosingResponse,
  type ConcurrencyControls,
  type ConcurrencyIdiom,
  concurrencyControls,
  concurrencyMiddleware,
  fetchConcurrency,
} from './http/concurrency-middleware.js';
export {
  createWebhookGate,
  type WebhookGate,
  type WebhookGateOptions,
} from './http/webhook-gate.js';
export type { BrowserBudgetOptions } from './http/browser-budget.js';
export {
  type FailureLimitControls,
  type ChargeControl,
  type RequestLimitControls,
  withControls,
} from './http/controls.js';
export {
  type FetchHeaders,
  fetchRawRequest,
  knownOutcome,
  outcomeOnce,
  unresolvedAddressWarning,
} from './http/fetch.js';
export type { PerRequest } from './http/policies.js';
export {
  createRequestGate,
  type RawResponse,
  type RequestGate,
  type RequestGateOptions,
  type RequestResult,
} from './http/request-gate.js';
export {
  boolean as booleanOption,
  either as eitherOption,
  exclusiveLimiter,
  func as functionOption,
  integer as integerOption,
  nonEmptyString as nonEmptyStringOption,
  type OptionCheck,
  type OptionSpec,
  oneOf as oneOfOption,
  parseOptions,
  required as requiredOption,
  withMethods as methodsOption,
} from './options.js';
