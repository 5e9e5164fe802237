import type { Decision } from '@portcullis/core';
import type {
  AdapterConcurrencyOptions,
  AdapterRateLimitOptions,
  AuthGuardOptions as GuardOptions,
  OnLimitedHook,
  WebhookGateOptions,
} from '@portcullis/core/adapter';
import type { FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The `rateLimit` decision for this request (absent when skipped or the route is not limited). */
    rateLimit?: Decision;
    /**
     * Spends `units` more of this request's budget now, in the limiter the plugin put on its route
     * (docs/design.md#charge-after), and resolves to the units spent (what is left, when fewer
     * are). A request the limiter did not count (`skip`, an access rule) is charged nothing.
     * Rejects with a RangeError `ERR_PORTCULLIS_COST` for units that are not a non-negative
     * integer, and with `ERR_PORTCULLIS_NOT_LIMITED` on a route the plugin does not limit.
     */
    chargeRateLimit(units: number): Promise<number>;
  }
}

/** Called instead of the default 429 answer; it must send the reply itself. */
export type OnLimited = OnLimitedHook<[request: FastifyRequest, reply: FastifyReply]>;

/** Options of `rateLimit`: the core request limiter's options plus `onLimited`. */
export interface RateLimitOptions
  extends AdapterRateLimitOptions<FastifyRequest, FastifyReply, OnLimited> {}

/** Options of `authGuard`: docs/design.md#gateway-auth; `verify` receives the Fastify request. */
export type AuthGuardOptions = GuardOptions<FastifyRequest>;

/** Options of `webhookGuard`: docs/design.md#webhooks; `verify` receives the Fastify request. */
export type WebhookGuardOptions = WebhookGateOptions<FastifyRequest>;

/**
 * Options of `concurrency`: docs/design.md#concurrency; `key` and `skip` receive the Fastify
 * request, `onLimited` answers a refusal.
 */
export interface ConcurrencyOptions extends AdapterConcurrencyOptions<FastifyRequest, OnLimited> {}
