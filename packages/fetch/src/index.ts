/**
 * @portcullis/fetch — Portcullis for Fetch API handlers (`(request, ...rest) => Response`: Bun,
 * Deno, Next.js route handlers, Cloudflare Workers). Each factory compiles a core gate once and
 * wraps a handler in core's rule for handlers that return a `Response`; no limiter logic lives
 * here.
 * @packageDocumentation
 */
import { PortcullisConfigError } from '@portcullis/core';
import {
  answerResponse,
  clientAddressSpec,
  type ConcurrencyControls,
  concurrencyControls,
  controlsOf,
  createAuthGate,
  createConcurrencyGate,
  createRequestGate,
  createWebhookGate,
  type FailureLimitControls,
  type FetchIdiom,
  type FetchMiddleware,
  fetchConcurrency,
  fetchGuard,
  fetchRateLimit,
  onLimitedSpec,
  type ChargeControl,
  type RequestLimitControls,
  withControls,
  withResponseHeaders,
} from '@portcullis/core/adapter';
import { type ClientOptions, rawRequestOf } from './client.js';
import { exposeDecision } from './decisions.js';
import type {
  AuthGuardOptions,
  ConcurrencyOptions,
  FetchHandler,
  RateLimitOptions,
  WebhookGuardOptions,
  Wrap,
} from './options.js';

export { decisionOf } from './decisions.js';
export type * from './options.js';

const rateLimitSpec = { ...clientAddressSpec, ...onLimitedSpec };

/**
 * A plain handler's side of core's rule for handlers that return a `Response`: there is nowhere
 * to prepare headers, so they are added to the response; the decision is kept for `decisionOf`.
 */
function fetchIdiom<R extends Request, A extends unknown[]>(
  options: ClientOptions<R, A>,
  where: string,
): FetchIdiom<R, A, FetchHandler<R, A>, R, Response> {
  return {
    request: (request) => request,
    raw: rawRequestOf(options, where),
    req: (request) => request,
    expose: (decision, request) => exposeDecision(request, decision),
    prepare() {},
    send: answerResponse,
    next: (request, rest, handler) => handler(request, ...rest),
    response: (handed) => handed as Response,
    finish: withResponseHeaders,
    limited: withResponseHeaders,
    replace: (response) => response,
  };
}

/**
 * What a factory returns: a wrapper that refuses, at wrapping time, anything but a handler, and
 * calls the middleware with the handler's extra arguments (under the middleware's name).
 */
function wrapper<
  R extends Request,
  A extends unknown[],
  C extends RequestLimitControls | FailureLimitControls | ConcurrencyControls,
>(
  middleware: FetchMiddleware<R, A, FetchHandler<R, A>, Response> & { readonly limiter: unknown },
  where: string,
  controls: C = controlsOf(middleware as unknown as FailureLimitControls) as C,
): Wrap<R, A> & C {
  return withControls(function wrap(handler: FetchHandler<R, A>) {
    if (typeof handler !== 'function') {
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_HANDLER',
        'handler',
        `${where}(options) returns a wrapper: pass it the handler to guard, ${where}(options)(handler), got ${handler === null ? 'null' : typeof handler}`,
      );
    }
    const wrapped = (request: R, ...rest: A): Promise<Response> =>
      middleware(request, rest, handler);
    return Object.defineProperty(wrapped, 'name', { value: middleware.name, configurable: true });
  }, controls);
}

/**
 * The general request limiter (docs/design.md#request-limiter) around a Fetch handler. Allowed
 * requests get the counter headers on the handler's response and `decisionOf(request)`; refused
 * ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option, or no `clientAddress`
 */
export function rateLimit<R extends Request = Request, A extends unknown[] = unknown[]>(
  options: RateLimitOptions<R, A>,
): Wrap<R, A> & RequestLimitControls & ChargeControl<R, A> {
  const gate = createRequestGate<R, Response>(options, rateLimitSpec);
  const onLimited = options?.onLimited;
  const middleware = fetchRateLimit(gate, fetchIdiom<R, A>(options, 'rateLimit'), {
    onLimited: onLimited && ((decision, request) => onLimited(request, decision)),
  });
  return wrapper(middleware, 'rateLimit', {
    ...controlsOf(middleware),
    // The handler's further arguments, as clientAddress(request, ...rest) reads them.
    charge: (request: R, units: number, ...rest: A) => middleware.charge(request, units, rest),
  });
}

/**
 * Gateway auth (docs/design.md#gateway-auth) around a Fetch handler: the lockout is checked
 * before credentials are compared; missing credentials get 401 uncounted; wrong ones are counted
 * (401, then 429 with the `authRateLimitedError` body); right ones reset the client's count and
 * reach the handler.
 * @throws {PortcullisConfigError} for a wrong or unknown option, or no `clientAddress`
 */
export function authGuard<R extends Request = Request, A extends unknown[] = unknown[]>(
  options: AuthGuardOptions<R, A>,
): Wrap<R, A> & FailureLimitControls {
  const gate = createAuthGate<R>(options, { where: 'authGuard', extra: clientAddressSpec });
  return wrapper(fetchGuard(gate, fetchIdiom(options, 'authGuard')), 'authGuard');
}

/**
 * Webhook ingress (docs/design.md#webhooks) around a Fetch handler: a right token resets and
 * reaches the handler (even during a lockout); wrong or missing tokens get 401, then a plain-text
 * 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option, or no `clientAddress`
 */
export function webhookGuard<R extends Request = Request, A extends unknown[] = unknown[]>(
  options: WebhookGuardOptions<R, A>,
): Wrap<R, A> & FailureLimitControls {
  const gate = createWebhookGate<R>(options, clientAddressSpec);
  return wrapper(fetchGuard(gate, fetchIdiom(options, 'webhookGuard')), 'webhookGuard');
}

/**
 * The concurrency limit (docs/design.md#concurrency) around a Fetch handler: at most `max`
 * requests of one key in flight; the slot is held until the response body has been read to its
 * end or cancelled (or the request's signal aborts). Refused requests get the JSON 429 with
 * `Retry-After` (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option, or no `clientAddress`
 */
export function concurrency<R extends Request = Request, A extends unknown[] = unknown[]>(
  options: ConcurrencyOptions<R, A>,
): Wrap<R, A> & ConcurrencyControls {
  const gate = createConcurrencyGate<R>(options, rateLimitSpec);
  const onLimited = options?.onLimited;
  const middleware = fetchConcurrency(gate, fetchIdiom<R, A>(options, 'concurrency'), {
    onLimited: onLimited && ((decision, request) => onLimited(request, decision)),
  });
  return wrapper(middleware, 'concurrency', concurrencyControls(middleware));
}
