import type { Decision } from '@portcullis/core';
import type {
  AdapterConcurrencyOptions,
  AdapterRateLimitOptions,
  AuthGuardOptions as GuardOptions,
  OnLimitedHook,
  WebhookGateOptions,
} from '@portcullis/core/adapter';
import type { Request as KoaRequest, Response as KoaResponse, ParameterizedContext } from 'koa';

/** What `rateLimit` adds to `ctx.state`. */
export interface RateLimitState {
  /** The `rateLimit` decision for this request (absent when skipped). */
  rateLimit?: Decision;
}

/** The context `rateLimit` runs in. */
export type RateLimitContext = ParameterizedContext<RateLimitState>;

/**
 * Called instead of the default 429 answer with Koa's request object, the context and the
 * decision; it must answer through `ctx` itself.
 */
export type OnLimited = OnLimitedHook<[req: KoaRequest, ctx: RateLimitContext]>;

/**
 * Options of `rateLimit`: the core request limiter's options plus `onLimited`. `key`, `skip`
 * and `cost` receive Koa's request object (`ctx.request`; the context is `req.ctx`);
 * `requestWasSuccessful` receives `ctx.request` and `ctx.response`.
 */
export interface RateLimitOptions
  extends AdapterRateLimitOptions<KoaRequest, KoaResponse, OnLimited> {}

/** Options of `authGuard`: docs/design.md#gateway-auth; `verify` receives Koa's request object (`ctx.request`). */
export type AuthGuardOptions = GuardOptions<KoaRequest>;

/** Options of `webhookGuard`: docs/design.md#webhooks; `verify` receives Koa's request object (`ctx.request`). */
export type WebhookGuardOptions = WebhookGateOptions<KoaRequest>;

/**
 * Options of `concurrency`: docs/design.md#concurrency; `key` and `skip` receive the Koa request,
 * `onLimited` answers a refusal.
 */
export interface ConcurrencyOptions extends AdapterConcurrencyOptions<KoaRequest, OnLimited> {}
