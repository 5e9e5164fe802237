/**
 * @portcullis/fetch — Portcullis for Fetch API handlers (`(request, ...rest) => Response`: Bun,
 * Deno, Next.js route handlers, Cloudflare Workers). Each factory compiles a core gate once and
 * wraps a handler, translating the gate's ready-made answer into a `Response`; no limiter logic
 * lives here.
 * @packageDocumentation
 */
import { type MaybePromise, PortcullisConfigError, type RawRequest } from '@portcullis/core';
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
  withControls,
} from '@portcullis/core/adapter';
import { rawRequestOf } from './client.js';
import { exposeDecision } from './decisions.js';
import type {
  AuthGuardOptions,
  FetchHandler,
  RateLimitOptions,
  WebhookGuardOptions,
  Wrap,
} from './options.js';

export { decisionOf } from './decisions.js';
export type {
  AuthGuardOptions,
  ClientAddressOption,
  FetchHandler,
  OnLimited,
  RateLimitOptions,
  WebhookGuardOptions,
  Wrap,
} from './options.js';

const clientSpec = { clientAddress: functionOption };
const rateLimitSpec = { ...clientSpec, onLimited: functionOption };

/** A core answer as it is: status, every header, body. */
function toResponse(a: HttpAnswer): Response {
  return new Response(a.body, { status: a.status, headers: a.headers });
}

/**
 * Adds the counter headers to the handler's response, unless it set a field of that name itself.
 * A response with immutable headers (one from `fetch()`, `Response.redirect()`) is copied first.
 */
function withHeaders(response: Response, headers: Readonly<Record<string, string>>): Response {
  let out = response;
  for (const name in headers) {
    if (out.headers.has(name)) continue;
    try {
      out.headers.set(name, headers[name] as string);
    } catch {
      out = new Response(out.body, out);
      out.headers.set(name, headers[name] as string);
    }
  }
  return out;
}

/** Refuses, at wrapping time, anything but a handler. */
function checkHandler(handler: unknown, where: string): void {
  if (typeof handler === 'function') return;
  throw new PortcullisConfigError(
    'ERR_PORTCULLIS_HANDLER',
    'handler',
    `${where}(options) returns a wrapper: pass it the handler to guard, ${where}(options)(handler), got ${handler === null ? 'null' : typeof handler}`,
  );
}

/**
 * The general request limiter (docs/design.md#request-limiter) around a Fetch handler. Allowed
 * requests get the counter headers on the handler's response and `decisionOf(request)`; refused
 * ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option, or no `clientAddress`
 */
export function rateLimit<R extends Request = Request, A extends unknown[] = unknown[]>(
  options: RateLimitOptions<R, A>,
): Wrap<R, A> & RequestLimitControls {
  const gate = createRequestGate<R, Response>(options, rateLimitSpec);
  const rawOf = rawRequestOf(
    options?.clientAddress,
    options?.logger,
    'rateLimit',
    options?.warnings,
  );
  const onLimited = options?.onLimited;

  return withControls(
    function wrap(handler: FetchHandler<R, A>) {
      checkHandler(handler, 'rateLimit');
      return async function portcullisRateLimit(request: R, ...rest: A): Promise<Response> {
        const decided = gate.run(rawOf(request, rest), request);
        const result = isPromise(decided) ? await decided : decided;
        if (result === undefined) return handler(request, ...rest);
        exposeDecision(request, result.decision);
        if (!result.ok) {
          if (onLimited === undefined) return toResponse(result.answer as HttpAnswer);
          return withHeaders(await onLimited(request, result.decision), result.headers);
        }
        if (!gate.tracksOutcome)
          return withHeaders(await handler(request, ...rest), result.headers);
        let response: Response | undefined;
        const settle = outcomeOnce(request.signal, (status) =>
          gate.track(result, knownOutcome(status), request, response as Response),
        );
        try {
          response = await handler(request, ...rest);
        } catch (error) {
          settle(undefined);
          throw error;
        }
        settle(response.status);
        return withHeaders(response, result.headers);
      };
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter, close: gate.close },
  );
}

/**
 * The guarded handler of an auth or webhook gate, through core's `guardMiddleware`: its answer,
 * or the handler's response; an error rejects the guarded handler's promise.
 */
function guarded<R extends Request, A extends unknown[]>(
  gate: GuardGate<R>,
  rawOf: (request: R, rest: A) => RawRequest,
  where: string,
): Wrap<R, A> & FailureLimitControls {
  const middleware = guardMiddleware<R, A, FetchHandler<R, A>, R>(gate, {
    raw: rawOf,
    req: (request) => request,
    sent: () => false,
    setHeaders() {},
    send: toResponse,
    next: (request, rest, handler) => handler(request, ...rest),
    fail(error) {
      throw error;
    },
  });
  return withControls(
    function wrap(handler: FetchHandler<R, A>) {
      checkHandler(handler, where);
      return async function portcullisGuard(request: R, ...rest: A): Promise<Response> {
        return middleware(request, rest, handler) as MaybePromise<Response>;
      };
    },
    { reconfigure: middleware.reconfigure, limiter: middleware.limiter, close: middleware.close },
  );
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
  const gate = createAuthGate<R>(options, { where: 'authGuard', extra: clientSpec });
  const rawOf = rawRequestOf(
    options?.clientAddress,
    options?.logger,
    'authGuard',
    options?.warnings,
  );
  return guarded<R, A>(gate, rawOf, 'authGuard');
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
  const gate = createWebhookGate<R>(options, clientSpec);
  const rawOf = rawRequestOf(
    options?.clientAddress,
    options?.logger,
    'webhookGuard',
    options?.warnings,
  );
  return guarded<R, A>(gate, rawOf, 'webhookGuard');
}
