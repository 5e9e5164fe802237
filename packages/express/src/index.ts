/**
 * @portcullis/express — Express middleware for Portcullis. Each factory compiles a core gate once
 * and translates its ready-made answer into `res`; no limiter logic lives here.
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
import type { NextFunction, Request, RequestHandler, Response } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The `rateLimit` decision for this request (absent when skipped or not limited). */
      rateLimit?: Decision;
    }
  }
}

/** Called instead of the default 429 answer; it must answer the request itself. */
export type OnLimited = (req: Request, res: Response, decision: Decision) => void | Promise<void>;

/** Options of {@link rateLimit}: the core request limiter's options plus `onLimited`. */
export interface RateLimitOptions extends RequestGateOptions<Request> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down,
   * `decision.reason === 'store-error'`). The counter headers and `Retry-After` are already set.
   * @default the core's 429 answer
   */
  onLimited?: OnLimited;
}

/** Options of {@link authGuard}: DESIGN 3.2; `verify` receives the Express request. */
export interface AuthGuardOptions extends Omit<AuthGateOptions<Request>, 'verify'> {
  /** Compares the request's credentials (constant-time, please). */
  verify: (req: Request) => MaybePromise<AuthOutcome>;
}

/** Options of {@link webhookGuard}: DESIGN 3.4; `verify` receives the Express request. */
export type WebhookGuardOptions = WebhookGateOptions<Request>;

const onLimitedSpec = { onLimited: functionOption };

/** Sets every header of a record on `res`. */
function setHeaders(res: Response, headers: Readonly<Record<string, string>>): void {
  for (const name in headers) res.setHeader(name, headers[name] as string);
}

/** Writes a core answer as it is (status, every header, body) and ends the response. */
function sendAnswer(res: Response, answer: HttpAnswer): void {
  res.statusCode = answer.status;
  setHeaders(res, answer.headers);
  res.end(answer.body);
}

/**
 * The general request limiter (DESIGN 4) as Express middleware. Allowed requests get the counter
 * headers and `req.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(options?: RateLimitOptions): RequestHandler {
  const gate = createRequestGate<Request>(options, onLimitedSpec);
  const onLimited = options?.onLimited;

  function applyRateLimit(
    result: RequestResult | undefined,
    req: Request,
    res: Response,
    next: NextFunction,
  ): void {
    if (result === undefined) {
      next();
    } else if (result.ok) {
      req.rateLimit = result.decision;
      setHeaders(res, result.headers);
      next();
    } else if (onLimited === undefined) {
      req.rateLimit = result.decision;
      sendAnswer(res, result.answer as HttpAnswer);
    } else {
      req.rateLimit = result.decision;
      setHeaders(res, result.headers);
      const done = onLimited(req, res, result.decision);
      if (isPromise(done)) done.then(undefined, next);
    }
  }

  return function portcullisRateLimit(req: Request, res: Response, next: NextFunction): void {
    const result = gate.run(req, req);
    if (isPromise(result)) result.then((r) => applyRateLimit(r, req, res, next)).catch(next);
    else applyRateLimit(result, req, res, next);
  };
}

/** Continues on success; otherwise writes the gate's answer (401, 429 or 503). */
function applyGate(result: GateResult, res: Response, next: NextFunction): void {
  if (result.ok) next();
  else sendAnswer(res, result.answer);
}

/**
 * Gateway auth (DESIGN 3.2) as Express middleware: the lockout is checked before credentials are
 * compared; missing credentials get 401 uncounted; wrong ones are counted (401, then 429 with the
 * `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): RequestHandler {
  const gate = createAuthGate<Request>(options, { where: 'authGuard' });
  return function portcullisAuthGuard(req: Request, res: Response, next: NextFunction): void {
    const result = gate.run(req, req);
    if (isPromise(result)) result.then((r) => applyGate(r, res, next)).catch(next);
    else applyGate(result, res, next);
  };
}

/**
 * Webhook ingress (DESIGN 3.4) as Express middleware: a right token resets and continues (even
 * during a lockout); wrong or missing tokens get 401, then a plain-text 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard(options: WebhookGuardOptions): RequestHandler {
  const gate = createWebhookGate<Request>(options);
  return function portcullisWebhookGuard(req: Request, res: Response, next: NextFunction): void {
    const result = gate.run(req, req);
    if (isPromise(result)) result.then((r) => applyGate(r, res, next)).catch(next);
    else applyGate(result, res, next);
  };
}
