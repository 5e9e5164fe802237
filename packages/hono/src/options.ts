import type { Decision } from '@portcullis/core';
import type {
  AuthGuardOptions as GuardOptions,
  ConcurrencyGateOptions,
  RequestGateOptions,
  WebhookGateOptions,
} from '@portcullis/core/adapter';
import type { Context, Env } from 'hono';

/**
 * What `rateLimit` puts in Hono's context variables, `c.get('rateLimit')`. Importing the package
 * already types it (`ContextVariableMap`); this is for a typed `Env` (`{ Variables: … }`).
 */
export interface RateLimitVariables {
  /** The `rateLimit` decision for this request (absent when skipped or not limited). */
  rateLimit?: Decision;
}

declare module 'hono' {
  interface ContextVariableMap {
    /** The `rateLimit` decision for this request (absent when skipped or not limited). */
    rateLimit?: Decision;
  }
}

/** Where the client address comes from (docs/design.md#client-identity; Hono has no socket of its own). */
export interface ClientAddressOption<E extends Env = Env> {
  /**
   * The address of the peer that sent the request (an IP address; `undefined` or `null` when unknown).
   * Forwarding headers are still only believed from `trustedProxies`. Runtime one-liners: see the
   * README (Bun, Deno, Cloudflare, Vercel).
   * @default the socket of `@hono/node-server`'s incoming request; elsewhere unresolved (one
   * warning, and such requests share the `unknown` bucket)
   */
  clientAddress?: (c: Context<E>) => string | null | undefined;
}

/**
 * Called instead of the default 429 answer with the context and the decision; it returns the
 * response. The counter headers and `Retry-After` are already set on `c`.
 */
export type OnLimited<E extends Env = Env> = (
  c: Context<E>,
  decision: Decision,
) => Response | Promise<Response>;

/**
 * Options of `rateLimit`: the core request limiter's options (docs/design.md#request-limiter),
 * `clientAddress` and `onLimited`. `limit`, `windowMs`, `key`, `skip` and `cost` receive the
 * context; `requestWasSuccessful` the context and the final `Response`.
 */
export interface RateLimitOptions<E extends Env = Env>
  extends RequestGateOptions<Context<E>, Response>,
    ClientAddressOption<E> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down,
   * `decision.reason === 'store-error'`).
   * @default the core's 429 answer
   */
  onLimited?: OnLimited<E>;
}

/** Options of `authGuard`: docs/design.md#gateway-auth; `verify` receives the context. */
export interface AuthGuardOptions<E extends Env = Env>
  extends GuardOptions<Context<E>>,
    ClientAddressOption<E> {}

/** Options of `webhookGuard`: docs/design.md#webhooks; `verify` receives the context. */
export interface WebhookGuardOptions<E extends Env = Env>
  extends WebhookGateOptions<Context<E>>,
    ClientAddressOption<E> {}

/**
 * Options of `concurrency` (docs/design.md#concurrency): the core gate's, where `key` and `skip`
 * receive the context, plus `clientAddress` and `onLimited`.
 */
export interface ConcurrencyOptions<E extends Env = Env>
  extends ConcurrencyGateOptions<Context<E>>,
    ClientAddressOption<E> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down);
   * `Retry-After` is prepared on `c`. @default the core's 429 answer
   */
  onLimited?: OnLimited<E>;
}
