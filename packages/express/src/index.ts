/**
 * @portcullis/express — Express middleware for Portcullis. Each factory compiles a core gate once
 * and translates its ready-made answer into `res`; no limiter logic lives here.
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
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { exposeDecision } from './expose.js';
import type {
  AuthGuardOptions,
  ConcurrencyOptions,
  RateLimitOptions,
  WebhookGuardOptions,
} from './options.js';

export type * from './options.js';

/**
 * Express's side of the rules every adapter shares (core's `rateLimitMiddleware` and
 * `guardMiddleware`): a response an earlier middleware already sent is left alone (setting a
 * header then would throw `ERR_HTTP_HEADERS_SENT`), and errors go to `next(error)`.
 */
const express: RateLimitIdiom<Request, Response, NextFunction, Request, Response> &
  ConcurrencyIdiom<Request, Response, NextFunction, Request> = {
  raw: (req) => req,
  req: (req) => req,
  sent: (_req, res) => res.headersSent,
  setHeaders(headers, _req, res) {
    for (const name in headers) res.setHeader(name, headers[name] as string);
  },
  send(answer, _req, res) {
    res.statusCode = answer.status;
    for (const name in answer.headers) res.setHeader(name, answer.headers[name] as string);
    res.end(answer.body);
  },
  next: (_req, _res, next) => next(),
  fail: (error, _req, _res, next) => next(error),
  expose: (decision, req) => exposeDecision(req, decision),
  rawRes: (_req, res) => res,
  res: (_req, res) => res,
  closing: (_req, res) => res,
};

/**
 * The general request limiter (docs/design.md#request-limiter) as Express middleware. Allowed requests get the counter
 * headers and `req.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(
  options?: RateLimitOptions,
): RequestHandler & RequestLimitControls & ChargeControl<Request> {
  const gate = createRequestGate<Request, Response>(options, onLimitedSpec);
  const onLimited = options?.onLimited;
  return rateLimitMiddleware(gate, express, {
    name: 'portcullisRateLimit',
    onLimited: onLimited && ((decision, req, res) => onLimited(req, res, decision)),
  });
}

/**
 * Gateway auth (docs/design.md#gateway-auth) as Express middleware: the lockout is checked before credentials are
 * compared; missing credentials get 401 uncounted; wrong ones are counted (401, then 429 with the
 * `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): RequestHandler & FailureLimitControls {
  return guardMiddleware(createAuthGate<Request>(options, { where: 'authGuard' }), express, {
    name: 'portcullisAuthGuard',
  });
}

/**
 * Webhook ingress (docs/design.md#webhooks) as Express middleware: a right token resets and continues (even
 * during a lockout); wrong or missing tokens get 401, then a plain-text 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard(options: WebhookGuardOptions): RequestHandler & FailureLimitControls {
  return guardMiddleware(createWebhookGate<Request>(options), express, {
    name: 'portcullisWebhookGuard',
  });
}

/**
 * The concurrency limit (docs/design.md#concurrency) as Express middleware: at most `max`
 * requests of one key in flight; the slot is given back when the response closes (finished,
 * failed or abandoned). Refused requests get the JSON 429 with `Retry-After` (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function concurrency(options: ConcurrencyOptions): RequestHandler & ConcurrencyControls {
  const gate = createConcurrencyGate<Request>(options, onLimitedSpec);
  const onLimited = options?.onLimited;
  return concurrencyMiddleware(gate, express, {
    onLimited: onLimited && ((decision, req, res) => onLimited(req, res, decision)),
  });
}
