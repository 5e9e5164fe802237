import type { Decision, MaybePromise } from '@portcullis/core';
import type {
  AuthGuardOptions as GuardOptions,
  ConcurrencyGateOptions,
  RequestGateOptions,
  WebhookGateOptions,
} from '@portcullis/core/adapter';

/** A Fetch API handler: Bun.serve's and Deno.serve's `fetch`, a Next.js route handler, … */
export type FetchHandler<R extends Request = Request, A extends unknown[] = unknown[]> = (
  request: R,
  ...rest: A
) => MaybePromise<Response>;

/** What a factory returns: it wraps a handler into one with the same parameters. */
export type Wrap<R extends Request, A extends unknown[]> = (
  handler: FetchHandler<R, A>,
) => (request: R, ...rest: A) => Promise<Response>;

/** Where the client address comes from: a Fetch request has no socket (docs/design.md#client-identity). */
export interface ClientAddressOption<R extends Request = Request, A extends unknown[] = unknown[]> {
  /**
   * The address of the peer that sent the request (an IP address; `undefined` or `null` when the runtime
   * has none, which leaves the client unresolved: such requests share the `unknown` bucket and one
   * warning is logged). Receives what the runtime passes the handler: Bun's `server`, Deno's
   * `info`, … Forwarding headers are still only believed from `trustedProxies`.
   * Required; runtime one-liners are in the README.
   */
  clientAddress: (request: R, ...rest: A) => string | null | undefined;
}

/** Answers a refused request instead of the default 429; the counter headers are added to it. */
export type OnLimited<R extends Request = Request> = (
  request: R,
  decision: Decision,
) => MaybePromise<Response>;

/**
 * Options of `rateLimit`: the core request limiter's options (docs/design.md#request-limiter),
 * `clientAddress` and `onLimited`. `limit`, `windowMs`, `key`, `skip` and `cost` receive the
 * request; `requestWasSuccessful` the request and the handler's `Response`.
 */
export interface RateLimitOptions<R extends Request = Request, A extends unknown[] = unknown[]>
  extends RequestGateOptions<R, Response>,
    ClientAddressOption<R, A> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down,
   * `decision.reason === 'store-error'`).
   * @default the core's 429 answer
   */
  onLimited?: OnLimited<R>;
}

/** Options of `authGuard`: docs/design.md#gateway-auth; `verify` receives the request. */
export interface AuthGuardOptions<R extends Request = Request, A extends unknown[] = unknown[]>
  extends GuardOptions<R>,
    ClientAddressOption<R, A> {
  /**
   * Compares the request's credentials (constant-time, please). To read the body, read a clone
   * (`request.clone().json()`): the handler gets the request after it.
   */
  verify: GuardOptions<R>['verify'];
}

/** Options of `webhookGuard`: docs/design.md#webhooks; `verify` receives the request. */
export interface WebhookGuardOptions<R extends Request = Request, A extends unknown[] = unknown[]>
  extends WebhookGateOptions<R>,
    ClientAddressOption<R, A> {}

/**
 * Options of `concurrency` (docs/design.md#concurrency): the core gate's, where `key` and `skip`
 * receive the request, plus `clientAddress` and `onLimited`.
 */
export interface ConcurrencyOptions<R extends Request = Request, A extends unknown[] = unknown[]>
  extends ConcurrencyGateOptions<R>,
    ClientAddressOption<R, A> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down);
   * `Retry-After` is added to its response. @default the core's 429 answer
   */
  onLimited?: OnLimited<R>;
}
