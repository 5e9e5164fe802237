/**
 * @portcullis/koa — Koa middleware for Portcullis. Each factory compiles a core gate once and
 * translates its ready-made answer into `ctx`; no limiter logic lives here.
 * @packageDocumentation
 */
import {
  type ConcurrencyControls,
  type ConcurrencyIdiom,
  concurrencyMiddleware,
  createAuthGate,
  createConcurrencyGate,
  createRequestGate,
  createWebhookGate,
  type FailureLimitControls,
  guardMiddleware,
  onLimitedSpec,
  type RateLimitIdiom,
  type ChargeControl,
  type RequestLimitControls,
  rateLimitMiddleware,
} from '@portcullis/core/adapter';
import type { Request as KoaRequest, Response as KoaResponse, Middleware, Next } from 'koa';
import type {
  AuthGuardOptions,
  ConcurrencyOptions,
  RateLimitContext,
  RateLimitOptions,
  RateLimitState,
  WebhookGuardOptions,
} from './options.js';

export type * from './options.js';

/**
 * Koa's side of the rules every adapter shares (core's `rateLimitMiddleware` and
 * `guardMiddleware`): the middleware returns `next()`'s promise, and an error is thrown for
 * Koa's error handling. Counter headers are set on the Node response directly: what
 * `ctx.set(headers)` does for string values, without the arrays Koa builds per call (this runs on
 * every request).
 */
const koa: RateLimitIdiom<RateLimitContext, Next, void, KoaRequest, KoaResponse> &
  ConcurrencyIdiom<RateLimitContext, Next, void, KoaRequest> = {
  raw: (ctx) => ctx.req,
  req: (ctx) => ctx.request,
  sent: (ctx) => ctx.res.headersSent,
  setHeaders(headers, ctx) {
    const res = ctx.res;
    for (const name in headers) res.setHeader(name, headers[name] as string);
  },
  send(answer, ctx) {
    ctx.status = answer.status;
    ctx.set(answer.headers);
    ctx.body = answer.body;
  },
  next: (_ctx, next) => next(),
  fail(error) {
    throw error;
  },
  expose(decision, ctx) {
    ctx.state.rateLimit = decision;
  },
  rawRes: (ctx) => ctx.res,
  res: (ctx) => ctx.response,
  closing: (ctx) => ctx.res,
};

/**
 * The general request limiter (docs/design.md#request-limiter) as Koa middleware. Allowed requests get the counter
 * headers and `ctx.state.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(
  options?: RateLimitOptions,
): Middleware<RateLimitState> & RequestLimitControls & ChargeControl<RateLimitContext> {
  const gate = createRequestGate<KoaRequest, KoaResponse>(options, onLimitedSpec);
  const onLimited = options?.onLimited;
  return rateLimitMiddleware(gate, koa, {
    name: 'portcullisRateLimit',
    onLimited: onLimited && ((decision, ctx) => onLimited(ctx.request, ctx, decision)),
  });
}

/**
 * Gateway auth (docs/design.md#gateway-auth) as Koa middleware: the lockout is checked before credentials are
 * compared; missing credentials get 401 uncounted; wrong ones are counted (401, then 429 with the
 * `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): Middleware & FailureLimitControls {
  return guardMiddleware(createAuthGate<KoaRequest>(options, { where: 'authGuard' }), koa, {
    name: 'portcullisAuthGuard',
  }) as Middleware & FailureLimitControls;
}

/**
 * Webhook ingress (docs/design.md#webhooks) as Koa middleware: a right token resets and continues (even during
 * a lockout); wrong or missing tokens get 401, then a plain-text 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard(options: WebhookGuardOptions): Middleware & FailureLimitControls {
  return guardMiddleware(createWebhookGate<KoaRequest>(options), koa, {
    name: 'portcullisWebhookGuard',
  }) as Middleware & FailureLimitControls;
}

/**
 * The concurrency limit (docs/design.md#concurrency) as Koa middleware: at most `max` requests
 * of one key in flight; the slot is given back when the response closes (finished, failed or
 * abandoned). Refused requests get the JSON 429 with `Retry-After` (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function concurrency(options: ConcurrencyOptions): Middleware & ConcurrencyControls {
  const gate = createConcurrencyGate<KoaRequest>(options, onLimitedSpec);
  const onLimited = options?.onLimited;
  return concurrencyMiddleware(gate, koa, {
    onLimited: onLimited && ((decision, ctx) => onLimited(ctx.request, ctx, decision)),
  }) as Middleware & ConcurrencyControls;
}
