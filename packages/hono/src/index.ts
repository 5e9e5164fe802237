/**
 * @portcullis/hono — Hono middleware for Portcullis, on any runtime. Each factory compiles a core
 * gate once and hands it to core's rule for handlers that return a `Response`, described here in
 * Hono's terms; no limiter logic lives here.
 * @packageDocumentation
 */
import {
  clientAddressSpec,
  type ConcurrencyControls,
  createAuthGate,
  createConcurrencyGate,
  createRequestGate,
  createWebhookGate,
  type FailureLimitControls,
  type FetchIdiom,
  fetchConcurrency,
  fetchGuard,
  fetchRateLimit,
  onLimitedSpec,
  type ChargeControl,
  type RequestLimitControls,
} from '@portcullis/core/adapter';
import type { Context, Env, MiddlewareHandler, Next } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { type ClientOptions, rawRequestOf } from './client.js';
import type {
  AuthGuardOptions,
  ConcurrencyOptions,
  RateLimitOptions,
  WebhookGuardOptions,
} from './options.js';

export type * from './options.js';

const rateLimitSpec = { ...clientAddressSpec, ...onLimitedSpec };

/**
 * A handler that returned a `Response` it built itself bypassed the headers prepared on `c`: they
 * are added to it, unless it set a field of that name itself. A response built by `c.json()`,
 * `c.text()` and the rest has them all, which one look at the first name shows (this runs on
 * every request).
 */
function keepHeaders(c: Context, headers: Readonly<Record<string, string>>): undefined {
  let first = true;
  for (const name in headers) {
    const has = c.res.headers.has(name);
    if (first && has) return;
    first = false;
    if (!has) c.header(name, headers[name] as string);
  }
}

/**
 * Hono's side of core's rule for frameworks whose handlers return a `Response`: headers are
 * prepared on `c` (the handler's `c.json()`, `c.text()`, … carry them), a refusal is the
 * middleware's response, and the handler's response is `c.res` once `next()` resolved.
 */
function hono<E extends Env>(
  options: ClientOptions<E>,
  where: string,
): FetchIdiom<Context<E>, Next, void, Context<E>, Response | undefined> {
  return {
    request: (c) => c.req.raw,
    raw: rawRequestOf(options, where),
    req: (c) => c,
    expose: (decision, c) => c.set('rateLimit', decision),
    prepare(headers, c) {
      for (const name in headers) c.header(name, headers[name] as string);
    },
    send: (a, c) => c.body(a.body, a.status as ContentfulStatusCode, a.headers),
    next: (_c, next) => next() as Promise<undefined>,
    response: (_handed, c) => c.res,
    finish: (_response, headers, c) => keepHeaders(c, headers),
    limited: (response) => response,
    replace(response, c) {
      c.res = response;
      return undefined;
    },
  };
}

/**
 * The general request limiter (docs/design.md#request-limiter) as Hono middleware. Allowed
 * requests get the counter headers and `c.get('rateLimit')`; refused ones the JSON 429 (or
 * `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit<E extends Env = Env>(
  options?: RateLimitOptions<E>,
): MiddlewareHandler<E> & RequestLimitControls & ChargeControl<Context<E>> {
  const gate = createRequestGate<Context<E>, Response>(options, rateLimitSpec);
  const onLimited = options?.onLimited;
  return fetchRateLimit(gate, hono<E>(options, 'rateLimit'), {
    name: 'portcullisRateLimit',
    onLimited: onLimited && ((decision, c) => onLimited(c, decision)),
  });
}

/**
 * Gateway auth (docs/design.md#gateway-auth) as Hono middleware: the lockout is checked before
 * credentials are compared; missing credentials get 401 uncounted; wrong ones are counted (401,
 * then 429 with the `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard<E extends Env = Env>(
  options: AuthGuardOptions<E>,
): MiddlewareHandler<E> & FailureLimitControls {
  const gate = createAuthGate<Context<E>>(options, {
    where: 'authGuard',
    extra: clientAddressSpec,
  });
  return fetchGuard(gate, hono<E>(options, 'authGuard'), { name: 'portcullisAuthGuard' });
}

/**
 * Webhook ingress (docs/design.md#webhooks) as Hono middleware: a right token resets and continues
 * (even during a lockout); wrong or missing tokens get 401, then a plain-text 429 with
 * `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard<E extends Env = Env>(
  options: WebhookGuardOptions<E>,
): MiddlewareHandler<E> & FailureLimitControls {
  const gate = createWebhookGate<Context<E>>(options, clientAddressSpec);
  return fetchGuard(gate, hono<E>(options, 'webhookGuard'), { name: 'portcullisWebhookGuard' });
}

/**
 * The concurrency limit (docs/design.md#concurrency) as Hono middleware: at most `max` requests
 * of one key in flight; the slot is held until the response body has been sent (or the client
 * left). Refused requests get the JSON 429 with `Retry-After` (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function concurrency<E extends Env = Env>(
  options: ConcurrencyOptions<E>,
): MiddlewareHandler<E> & ConcurrencyControls {
  const gate = createConcurrencyGate<Context<E>>(options, rateLimitSpec);
  const onLimited = options?.onLimited;
  return fetchConcurrency(gate, hono<E>(options, 'concurrency'), {
    name: 'portcullisConcurrency',
    onLimited: onLimited && ((decision, c) => onLimited(c, decision)),
  });
}
