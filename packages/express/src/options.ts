import type { Decision } from '@portcullis/core';
import type {
  AdapterConcurrencyOptions,
  AdapterRateLimitOptions,
  AuthGuardOptions as GuardOptions,
  OnLimitedHook,
  WebhookGateOptions,
} from '@portcullis/core/adapter';
import type { Request, Response } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The `rateLimit` decision for this request (absent when skipped or not limited). */
      rateLimit?: Decision;
    }
  }
}

/** Called instead of the default 429 answer; it must answer the request itself. */
export type OnLimited = OnLimitedHook<[req: Request, res: Response]>;

/** Options of `rateLimit`: the core request limiter's options plus `onLimited`. */
export interface RateLimitOptions extends AdapterRateLimitOptions<Request, Response, OnLimited> {}

/** Options of `authGuard`: docs/design.md#gateway-auth; `verify` receives the Express request. */
export type AuthGuardOptions = GuardOptions<Request>;

/** Options of `webhookGuard`: docs/design.md#webhooks; `verify` receives the Express request. */
export type WebhookGuardOptions = WebhookGateOptions<Request>;

/**
 * Options of `concurrency`: docs/design.md#concurrency; `key` and `skip` receive the Express
 * request, `onLimited` answers a refusal.
 */
export interface ConcurrencyOptions extends AdapterConcurrencyOptions<Request, OnLimited> {}
