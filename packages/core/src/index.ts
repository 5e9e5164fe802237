/**
 * @portcullis/core — the framework-agnostic limiter engine. Adapters translate its decisions;
 * everything that decides lives here.
 * @packageDocumentation
 */
export {
  type Clock,
  type MaybePromise,
  systemClock,
  systemTimers,
  type TimerHandle,
  type Timers,
  isPromise,
} from './clock.js';
export type { Decision, DecisionReason } from './decision.js';
export { PortcullisConfigError } from './errors.js';
export { callSafely, safeLogger } from './safe-call.js';
export {
  channels,
  type Logger,
  type PortcullisEvent,
  type StoreCallEvent,
  timeStoreCall,
} from './events.js';
export { byEnd } from './store.js';
export type {
  Algorithm,
  FailureDecision,
  FailureRule,
  Store,
  StoreLockout,
  WindowRule,
} from './store.js';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.js';
export {
  createFailureLimiter,
  type FailureLimiter,
  type FailureLimiterOptions,
  type FailureLimiterReconfig,
  type BanOptions,
  type LockoutInfo,
  type LockoutsOptions,
  type Subject,
} from './failure-limiter.js';
export {
  createWindowLimiter,
  type WindowLimiter,
  type WindowLimiterOptions,
  type WindowLimiterReconfig,
} from './window-limiter.js';
export {
  createSessionCreationLimiter,
  type SessionCreationLimiter,
  type SessionCreationLimiterOptions,
} from './session-creation.js';
export {
  createRestartScheduler,
  type RestartAttempt,
  type RestartEvent,
  type RestartScheduler,
  type RestartSchedulerOptions,
} from './restart-scheduler.js';
export { ipKey, isLoopback, normalizeIp } from './ip.js';
export { normalizeOrigin } from './origin.js';
export {
  type ClientInfo,
  type ClientOptions,
  type ClientResolver,
  createClientResolver,
  type RawRequest,
  resolveClient,
} from './client.js';
export { type AuthSubject, authSubject } from './subject.js';
export {
  type AuthFailedError,
  type AuthRateLimitedError,
  authFailedError,
  authRateLimitedError,
  type ErrorShape,
  type MethodRateLimitedError,
  methodRateLimitedError,
  requestRateLimitedError,
  retryAfterSeconds,
  sessionRateLimitMessage,
  storeUnavailableError,
} from './error-shapes.js';
export { type HeaderMode, type RateLimitHeaderOptions, rateLimitHeaders } from './headers.js';
export { presets } from './presets.js';
export type { GateResult, HttpAnswer } from './http/answer.js';
export {
  type AuthGate,
  type AuthGateOptions,
  type AuthOutcome,
  createAuthGate,
  type GateSetup,
} from './http/auth-gate.js';
export {
  createWebhookGate,
  type WebhookGate,
  type WebhookGateOptions,
} from './http/webhook-gate.js';
export type { BrowserBudgetOptions } from './http/browser-budget.js';
export {
  type FailureLimitControls,
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
