/**
 * @portcullis/hono — Hono middleware for Portcullis, on any runtime. Each factory compiles a core
 * gate once and translates its ready-made answer into a Hono response; no limiter logic lives here.
 * @packageDocumentation
 */
import {
  createAuthGate,
  createRequestGate,
  createWebhookGate,
  type FailureLimitControls,
  functionOption,
  type GuardGate,
  guardMiddleware,
  type HttpAnswer,
  isPromise,
  knownOutcome,
  outcomeOnce,
  type RequestLimitControls,
  type RequestResult,
  withControls,
} from '@portcullis/core/adapter';
import type { RawRequest } from '@portcullis/core';
import type { Context, Env, MiddlewareHandler, Next } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { rawRequestOf } from './client.js';
import type { AuthGuardOptions, RateLimitOptions, WebhookGuardOptions } from './options.js';

export type {
  AuthGuardOptions,
  ClientAddressOption,
  OnLimited,
  RateLimitOptions,
  RateLimitVariables,
  WebhookGuardOptions,
} from './options.js';

const clientSpec = { clientAddress: functionOption };
const rateLimitSpec = { ...clientSpec, onLimited: functionOption };

/** Prepares the counter headers: the handler's `c.json()`, `c.text()`, … carry them. */
function setHeaders(c: Context, headers: Readonly<Record<string, string>>): void {
  for (const name in headers) c.header(name, headers[name] as string);
}

/**
 * A handler that returned a `Response` it built itself bypasses the prepared headers: they are
 * added to it, unless it set a field of that name itself. A response built by `c.json()`, `c.text()`
 * and the rest has them all, which one look at the first name shows (this runs on every request).
 */
function keepHeaders(c: Context, headers: Readonly<Record<string, string>>): void {
  let first = true;
  for (const name in headers) {
    const has = c.res.headers.has(name);
    if (first && has) return;
    first = false;
    if (!has) c.header(name, headers[name] as string);
  }
}

/** A core answer as it is: status, every header, body. */
function answer(c: Context, a: HttpAnswer): Response {
  return c.body(a.body, a.status as ContentfulStatusCode, a.headers);
}

/**
 * The general request limiter (docs/design.md#request-limiter) as Hono middleware. Allowed
 * requests get the counter headers and `c.get('rateLimit')`; refused ones the JSON 429 (or
 * `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit<E extends Env = Env>(
  options?: RateLimitOptions<E>,
): MiddlewareHandler<E> & RequestLimitControls {
  const gate = createRequestGate<Context<E>, Response>(options, rateLimitSpec);
  const rawOf = rawRequestOf(
    options?.clientAddress,
    options?.logger,
    'rateLimit',
    options?.warnings,
  );
  const onLimited = options?.onLimited;

  async function allowed(result: RequestResult, c: Context<E>, next: Next) {
    const headers = result.headers;
    setHeaders(c, headers);
    if (!gate.tracksOutcome) {
      await next();
    } else {
      const settle = outcomeOnce(c.req.raw.signal, (status) =>
        gate.track(result, knownOutcome(status), c, c.res),
      );
      try {
        await next();
      } catch (error) {
        settle(undefined);
        throw error;
      }
      settle(c.res.status);
    }
    keepHeaders(c, headers);
  }

  async function refused(result: RequestResult, c: Context<E>): Promise<Response> {
    if (onLimited === undefined) return answer(c, result.answer as HttpAnswer);
    setHeaders(c, result.headers);
    return onLimited(c, result.decision);
  }

  function apply(
    result: RequestResult | undefined,
    c: Context<E>,
    next: Next,
  ): Promise<Response | undefined> {
    if (result === undefined) return next() as Promise<undefined>;
    c.set('rateLimit', result.decision);
    return result.ok ? (allowed(result, c, next) as Promise<undefined>) : refused(result, c);
  }

  // Not an async function: with the memory store the decision is synchronous, and an async
  // wrapper around allowed()'s promise would cost every request another promise and tick.
  return withControls(
    function portcullisRateLimit(c: Context<E>, next: Next): Promise<Response | undefined> {
      let result: ReturnType<typeof gate.run>;
      try {
        result = gate.run(rawOf(c), c);
      } catch (error) {
        return Promise.reject(error);
      }
      return isPromise(result) ? result.then((r) => apply(r, c, next)) : apply(result, c, next);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter, close: gate.close },
  );
}

/**
 * An auth or webhook guard through core's `guardMiddleware`: a refusal is the handler's
 * response, and an error is thrown for Hono's error handling.
 */
function guard<E extends Env>(
  gate: GuardGate<Context<E>>,
  rawOf: (c: Context<E>) => RawRequest,
  name: string,
): MiddlewareHandler<E> & FailureLimitControls {
  const middleware = guardMiddleware<Context<E>, Next, void, Context<E>>(gate, {
    raw: rawOf,
    req: (c) => c,
    sent: () => false,
    setHeaders: (headers, c) => setHeaders(c, headers),
    send: (a, c) => answer(c, a),
    next: (_c, next) => next(),
    fail(error) {
      throw error;
    },
  });
  const handler = async (c: Context<E>, next: Next): Promise<Response | undefined> =>
    middleware(c, next) as Response | undefined;
  Object.defineProperty(handler, 'name', { value: name, configurable: true });
  return withControls(handler, {
    reconfigure: middleware.reconfigure,
    limiter: middleware.limiter,
    close: middleware.close,
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
  const gate = createAuthGate<Context<E>>(options, { where: 'authGuard', extra: clientSpec });
  const rawOf = rawRequestOf(
    options?.clientAddress,
    options?.logger,
    'authGuard',
    options?.warnings,
  );
  return guard(gate, rawOf, 'portcullisAuthGuard');
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
  const gate = createWebhookGate<Context<E>>(options, clientSpec);
  const rawOf = rawRequestOf(
    options?.clientAddress,
    options?.logger,
    'webhookGuard',
    options?.warnings,
  );
  return guard(gate, rawOf, 'portcullisWebhookGuard');
}
