/**
 * @portcullis/core — the framework-agnostic limiter engine. Adapters translate its decisions;
 * everything that decides lives here. This entry holds what users of Portcullis call
 * (docs/design.md#public-names); what adapter and store authors need besides is
 * `@portcullis/core/adapter`.
 * @packageDocumentation
 */
export { type Clock, systemClock, type TimerHandle, type Timers } from './clock.js';
export type { MaybePromise } from './promise.js';
export type { Decision, DecisionReason } from './decision.js';
export { PortcullisConfigError } from './errors.js';
export { channels, type Logger, type PortcullisEvent, type StoreCallEvent } from './events.js';
export type {
  AccessListing,
  AccessRuleInput,
  Algorithm,
  EscalateRule,
  FailureDecision,
  FailureRule,
  LeaseAnswer,
  LeaseRule,
  Store,
  StoreAnswer,
  StoreCall,
  StoreLockout,
  StoredAccessRule,
  TrustRule,
  WindowRule,
} from './store.js';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.js';
export {
  type AccessList,
  type AccessListOptions,
  type AccessRuleOptions,
  createAccessList,
} from './access/access-list.js';
export type { AccessAction, AccessRule } from './access/matcher.js';
export type { AccessKind, AccessSubjectInput } from './access/subject.js';
export {
  createFailureLimiter,
  type FailureLimiter,
  type FailureLimiterOptions,
  type FailureLimiterReconfig,
  type AuthLayer,
  type BanOptions,
  type EscalateOptions,
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
  type ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  createConcurrencyLimiter,
  type Lease,
} from './concurrency-limiter.js';
export {
  createSessionCreationLimiter,
  type SessionCreationLimiter,
  type SessionCreationLimiterOptions,
} from './session-creation.js';
export {
  createRestartScheduler,
  type RestartAttempt,
  type RestartRequest,
  type RestartEvent,
  type RestartScheduler,
  type RestartSchedulerOptions,
} from './restart-scheduler.js';
export { ipKey, isLoopback, normalizeIp } from './ip.js';
export { normalizeOrigin } from './origin.js';
export { type ClientInfo, type ClientOptions, type RawRequest, resolveClient } from './client.js';
export { type AuthSubject, authSubject } from './subject.js';
export {
  type AccessDeniedError,
  accessDeniedError,
  type AuthRateLimitedError,
  authRateLimitedError,
  type ErrorShape,
  type MethodRateLimitedError,
  methodRateLimitedError,
  sessionRateLimitMessage,
  storeUnavailableError,
} from './error-shapes.js';
export { type HeaderMode, type RateLimitHeaderOptions, rateLimitHeaders } from './headers.js';
export { presets } from './presets.js';
export type { AuthOutcome } from './http/auth-gate.js';
export type {
  AccountLimitOptions,
  AccountLimitsOptions,
  AuthLayerOptions,
  LockoutEvent,
  LoopbackPenaltyOptions,
  PairLimitOptions,
  ScopeBudgetOptions,
  SprayLimitOptions,
} from './http/auth-layer-options.js';
export type { WarningCode, Warnings } from './warnings.js';
