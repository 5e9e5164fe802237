/**
 * @portcullis/koa — Koa middleware for Portcullis. Each factory compiles a core gate once and
 * translates its ready-made answer into `ctx`; no limiter logic lives here.
 * @packageDocumentation
 */
import {
  type AuthGateOptions,
  type AuthOutcome,
  createAuthGate,
  createRequestGate,
  createWebhookGate,
  functionOption,
  type Decision,
  type GateResult,
  type HttpAnswer,
  isPromise,
  type MaybePromise,
  type RequestGateOptions,
  type RequestResult,
  type WebhookGateOptions,
} from '@portcullis/core';
import type { Request as KoaRequest, Middleware, Next, ParameterizedContext } from 'koa';

/** What {@link rateLimit} adds to `ctx.state`. */
export interface RateLimitState {
  /** The `rateLimit` decision for this request (absent when skipped). */
  rateLimit?: Decision;
}

/** The context {@link rateLimit} runs in. */
export type RateLimitContext = ParameterizedContext<RateLimitState>;

/**
 * Called instead of the default 429 answer with Koa's request object, the context and the
 * decision; it must answer through `ctx` itself.
 */
export type OnLimited = (
  req: KoaRequest,
  ctx: RateLimitContext,
  decision: Decision,
) => void | Promise<void>;

/**
 * Options of {@link rateLimit}: the core request limiter's options plus `onLimited`. `key`, `skip`
 * and `cost` receive Koa's request object (`ctx.request`; the context is `req.ctx`).
 */
export interface RateLimitOptions extends RequestGateOptions<KoaRequest> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down,
   * `decision.reason === 'store-error'`). The counter headers and `Retry-After` are already set.
   * @default the core's 429 answer
   */
  onLimited?: OnLimited;
}

/** Options of {@link authGuard}: DESIGN 3.2; `verify` receives Koa's request object (`ctx.request`). */
export interface AuthGuardOptions extends Omit<AuthGateOptions<KoaRequest>, 'verify'> {
  /** Compares the request's credentials (constant-time, please). */
  verify: (req: KoaRequest) => MaybePromise<AuthOutcome>;
}

/** Options of {@link webhookGuard}: DESIGN 3.4; `verify` receives Koa's request object (`ctx.request`). */
export type WebhookGuardOptions = WebhookGateOptions<KoaRequest>;

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
 * The general request limiter (DESIGN 4) as Koa middleware. Allowed requests get the counter
 * headers and `ctx.state.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(options?: RateLimitOptions): Middleware<RateLimitState> {
  const gate = createRequestGate<KoaRequest>(options, onLimitedSpec);
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
      return next();
    }
    if (onLimited === undefined) return sendAnswer(ctx, result.answer as HttpAnswer);
    ctx.set(result.headers);
    return onLimited(ctx.request, ctx, result.decision);
  }

  return function portcullisRateLimit(ctx: RateLimitContext, next: Next): unknown {
    const result = gate.run(ctx.req, ctx.request);
    return isPromise(result)
      ? result.then((r) => applyRateLimit(r, ctx, next))
      : applyRateLimit(result, ctx, next);
  };
}

/** Continues on success; otherwise writes the gate's answer (401, 429 or 503). */
function applyGate(result: GateResult, ctx: ParameterizedContext, next: Next): unknown {
  if (result.ok) return next();
  return sendAnswer(ctx, result.answer);
}

/**
 * Gateway auth (DESIGN 3.2) as Koa middleware: the lockout is checked before credentials are
 * compared; missing credentials get 401 uncounted; wrong ones are counted (401, then 429 with the
 * `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): Middleware {
  const gate = createAuthGate<KoaRequest>(options, { where: 'authGuard' });
  return function portcullisAuthGuard(ctx: ParameterizedContext, next: Next): unknown {
    const result = gate.run(ctx.req, ctx.request);
    return isPromise(result)
      ? result.then((r) => applyGate(r, ctx, next))
      : applyGate(result, ctx, next);
  };
}

/**
 * Webhook ingress (DESIGN 3.4) as Koa middleware: a right token resets and continues (even during
 * a lockout); wrong or missing tokens get 401, then a plain-text 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard(options: WebhookGuardOptions): Middleware {
  const gate = createWebhookGate<KoaRequest>(options);
  return function portcullisWebhookGuard(ctx: ParameterizedContext, next: Next): unknown {
    const result = gate.run(ctx.req, ctx.request);
    return isPromise(result)
      ? result.then((r) => applyGate(r, ctx, next))
      : applyGate(result, ctx, next);
  };
}
