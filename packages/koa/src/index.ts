/**
 * @portcullis/koa — Koa middleware for Portcullis. Each factory compiles a core gate once and
 * translates its ready-made answer into `ctx`; no limiter logic lives here.
 * @packageDocumentation
 */
import {
  createAuthGate,
  type FailureLimitControls,
  type RequestLimitControls,
  withControls,
  createRequestGate,
  createWebhookGate,
  functionOption,
  type GateResult,
  type HttpAnswer,
  isPromise,
  type RequestResult,
} from '@portcullis/core';
import type {
  Request as KoaRequest,
  Response as KoaResponse,
  Middleware,
  Next,
  ParameterizedContext,
} from 'koa';
import type {
  AuthGuardOptions,
  RateLimitContext,
  RateLimitOptions,
  RateLimitState,
  WebhookGuardOptions,
} from './options.js';

export type {
  AuthGuardOptions,
  OnLimited,
  RateLimitContext,
  RateLimitOptions,
  RateLimitState,
  WebhookGuardOptions,
} from './options.js';

const onLimitedSpec = { onLimited: functionOption };

/**
 * Sets the counter headers of an allowed request: what `ctx.set(headers)` does for string values,
 * without the arrays Koa builds per call (this runs on every request).
 */
function setHeaders(ctx: ParameterizedContext, headers: Readonly<Record<string, string>>): void {
  const res = ctx.res;
  if (res.headersSent) return;
  for (const name in headers) res.setHeader(name, headers[name] as string);
}

/** Writes a core answer as it is: status, every header, body. */
function sendAnswer(ctx: ParameterizedContext, answer: HttpAnswer): void {
  ctx.status = answer.status;
  ctx.set(answer.headers);
  ctx.body = answer.body;
}

/**
 * The general request limiter (docs/design.md#request-limiter) as Koa middleware. Allowed requests get the counter
 * headers and `ctx.state.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(
  options?: RateLimitOptions,
): Middleware<RateLimitState> & RequestLimitControls {
  const gate = createRequestGate<KoaRequest, KoaResponse>(options, onLimitedSpec);
  const onLimited = options?.onLimited;

  function applyRateLimit(
    result: RequestResult | undefined,
    ctx: RateLimitContext,
    next: Next,
  ): unknown {
    if (result === undefined) return next();
    ctx.state.rateLimit = result.decision;
    if (result.ok) {
      setHeaders(ctx, result.headers);
      if (gate.tracksOutcome) gate.track(result, ctx.res, ctx.request, ctx.response);
      return next();
    }
    if (onLimited === undefined) return sendAnswer(ctx, result.answer as HttpAnswer);
    ctx.set(result.headers);
    return onLimited(ctx.request, ctx, result.decision);
  }

  return withControls(
    function portcullisRateLimit(ctx: RateLimitContext, next: Next): unknown {
      const result = gate.run(ctx.req, ctx.request);
      return isPromise(result)
        ? result.then((r) => applyRateLimit(r, ctx, next))
        : applyRateLimit(result, ctx, next);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
  );
}

/** Continues on success; otherwise writes the gate's answer (401, 429 or 503). */
function applyGate(result: GateResult, ctx: ParameterizedContext, next: Next): unknown {
  if (result.ok) return next();
  return sendAnswer(ctx, result.answer);
}

/**
 * Gateway auth (docs/design.md#gateway-auth) as Koa middleware: the lockout is checked before credentials are
 * compared; missing credentials get 401 uncounted; wrong ones are counted (401, then 429 with the
 * `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): Middleware & FailureLimitControls {
  const gate = createAuthGate<KoaRequest>(options, { where: 'authGuard' });
  return withControls(
    function portcullisAuthGuard(ctx: ParameterizedContext, next: Next): unknown {
      const result = gate.run(ctx.req, ctx.request);
      return isPromise(result)
        ? result.then((r) => applyGate(r, ctx, next))
        : applyGate(result, ctx, next);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
  );
}

/**
 * Webhook ingress (docs/design.md#webhooks) as Koa middleware: a right token resets and continues (even during
 * a lockout); wrong or missing tokens get 401, then a plain-text 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard(options: WebhookGuardOptions): Middleware & FailureLimitControls {
  const gate = createWebhookGate<KoaRequest>(options);
  return withControls(
    function portcullisWebhookGuard(ctx: ParameterizedContext, next: Next): unknown {
      const result = gate.run(ctx.req, ctx.request);
      return isPromise(result)
        ? result.then((r) => applyGate(r, ctx, next))
        : applyGate(result, ctx, next);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
  );
}
