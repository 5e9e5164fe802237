/**
 * @portcullis/express — Express middleware for Portcullis. Each factory compiles a core gate once
 * and translates its ready-made answer into `res`; no limiter logic lives here.
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
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { exposeDecision } from './expose.js';
import type { AuthGuardOptions, RateLimitOptions, WebhookGuardOptions } from './options.js';

export type {
  AuthGuardOptions,
  OnLimited,
  RateLimitOptions,
  WebhookGuardOptions,
} from './options.js';

const onLimitedSpec = { onLimited: functionOption };

/**
 * Sets every header of a record on `res`, unless an earlier middleware already sent the response
 * (setting a header then throws `ERR_HTTP_HEADERS_SENT`; the request was still counted).
 */
function setHeaders(res: Response, headers: Readonly<Record<string, string>>): void {
  if (res.headersSent) return;
  for (const name in headers) res.setHeader(name, headers[name] as string);
}

/**
 * Writes a core answer as it is (status, every header, body) and ends the response. When the
 * response was already sent by an earlier middleware there is nothing left to answer: it is left
 * alone, and the route's handler is not run either.
 */
function sendAnswer(res: Response, answer: HttpAnswer): void {
  if (res.headersSent) return;
  res.statusCode = answer.status;
  setHeaders(res, answer.headers);
  res.end(answer.body);
}

/**
 * The general request limiter (docs/design.md#request-limiter) as Express middleware. Allowed requests get the counter
 * headers and `req.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(options?: RateLimitOptions): RequestHandler & RequestLimitControls {
  const gate = createRequestGate<Request, Response>(options, onLimitedSpec);
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
      exposeDecision(req, result.decision);
      setHeaders(res, result.headers);
      if (gate.tracksOutcome) gate.track(result, res, req, res);
      next();
    } else if (onLimited === undefined) {
      exposeDecision(req, result.decision);
      sendAnswer(res, result.answer as HttpAnswer);
    } else {
      exposeDecision(req, result.decision);
      setHeaders(res, result.headers);
      const done = onLimited(req, res, result.decision);
      if (isPromise(done)) done.then(undefined, next);
    }
  }

  return withControls(
    function portcullisRateLimit(req: Request, res: Response, next: NextFunction): void {
      const result = gate.run(req, req);
      if (isPromise(result)) result.then((r) => applyRateLimit(r, req, res, next)).catch(next);
      else applyRateLimit(result, req, res, next);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
  );
}

/** Continues on success; otherwise writes the gate's answer (401, 429 or 503). */
function applyGate(result: GateResult, res: Response, next: NextFunction): void {
  if (result.ok) next();
  else sendAnswer(res, result.answer);
}

/**
 * Gateway auth (docs/design.md#gateway-auth) as Express middleware: the lockout is checked before credentials are
 * compared; missing credentials get 401 uncounted; wrong ones are counted (401, then 429 with the
 * `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): RequestHandler & FailureLimitControls {
  const gate = createAuthGate<Request>(options, { where: 'authGuard' });
  return withControls(
    function portcullisAuthGuard(req: Request, res: Response, next: NextFunction): void {
      const result = gate.run(req, req);
      if (isPromise(result)) result.then((r) => applyGate(r, res, next)).catch(next);
      else applyGate(result, res, next);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
  );
}

/**
 * Webhook ingress (docs/design.md#webhooks) as Express middleware: a right token resets and continues (even
 * during a lockout); wrong or missing tokens get 401, then a plain-text 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard(options: WebhookGuardOptions): RequestHandler & FailureLimitControls {
  const gate = createWebhookGate<Request>(options);
  return withControls(
    function portcullisWebhookGuard(req: Request, res: Response, next: NextFunction): void {
      const result = gate.run(req, req);
      if (isPromise(result)) result.then((r) => applyGate(r, res, next)).catch(next);
      else applyGate(result, res, next);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
  );
}
