import {
  type ConcurrencyControls,
  type ConcurrencyIdiom,
  concurrencyControls,
  concurrencyMiddleware,
  controlsOf,
  createConcurrencyGate,
  createAuthGate,
  createRequestGate,
  createWebhookGate,
  type FailureLimitControls,
  type GuardGate,
  guardMiddleware,
  type Middleware,
  onLimitedSpec,
  type RateLimitIdiom,
  type RequestGate,
  type ChargeControl,
  type RequestLimitControls,
  rateLimitMiddleware,
  withControls,
} from '@portcullis/core/adapter';
import type {
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
} from 'fastify';
import type {
  AuthGuardOptions,
  ConcurrencyOptions,
  RateLimitOptions,
  WebhookGuardOptions,
} from './options.js';

/**
 * Fastify's side of the rules every adapter shares (core's `rateLimitMiddleware` and
 * `guardMiddleware`): a reply already sent is left alone, and errors go to `done(error)`. Headers
 * are set one by one: `reply.headers(record)` would allocate a key array per call.
 */
const fastify: RateLimitIdiom<
  FastifyRequest,
  FastifyReply,
  HookHandlerDoneFunction,
  FastifyRequest,
  FastifyReply
> &
  ConcurrencyIdiom<FastifyRequest, FastifyReply, HookHandlerDoneFunction, FastifyRequest> = {
  raw: (request) => request.raw,
  req: (request) => request,
  sent: (_request, reply) => reply.sent,
  setHeaders(headers, _request, reply) {
    for (const name in headers) reply.header(name, headers[name] as string);
  },
  send(answer, _request, reply) {
    reply.code(answer.status);
    for (const name in answer.headers) reply.header(name, answer.headers[name] as string);
    reply.send(answer.body);
  },
  next: (_request, _reply, done) => done(),
  fail: (error, _request, _reply, done) => done(error as Error),
  expose(decision, request) {
    request.rateLimit = decision;
  },
  rawRes: (_request, reply) => reply.raw,
  res: (_request, reply) => reply,
  closing: (_request, reply) => reply.raw,
};

/**
 * A callback-style hook around a shared middleware: Fastify treats a hook that returns a promise as
 * an async one, and this one answers through `done`, so its result is never returned.
 */
function asHook<C extends FailureLimitControls | RequestLimitControls | ConcurrencyControls>(
  middleware: Middleware<FastifyRequest, FastifyReply, HookHandlerDoneFunction> & C,
  name: string,
  controls: C = controlsOf(middleware as FailureLimitControls) as C,
): onRequestHookHandler & C {
  const hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    middleware(request, reply, done);
  };
  Object.defineProperty(hook, 'name', { value: name, configurable: true });
  return withControls(hook, controls);
}

/**
 * The general request limiter (docs/design.md#request-limiter) as a Fastify `onRequest` hook. Allowed requests get the
 * counter headers and `request.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(
  options?: RateLimitOptions,
): onRequestHookHandler & RequestLimitControls & ChargeControl<FastifyRequest> {
  return createRateLimitHook(options).hook;
}

/** Builds the {@link rateLimit} hook and returns its gate too (the plugin closes it on shutdown). */
export function createRateLimitHook(options: RateLimitOptions | undefined): {
  readonly hook: onRequestHookHandler & RequestLimitControls & ChargeControl<FastifyRequest>;
  readonly gate: RequestGate<FastifyRequest, FastifyReply>;
} {
  const gate = createRequestGate<FastifyRequest, FastifyReply>(options, onLimitedSpec);
  const onLimited = options?.onLimited;
  const middleware = rateLimitMiddleware(gate, fastify, {
    onLimited: onLimited && ((decision, request, reply) => onLimited(request, reply, decision)),
  });
  const controls = {
    ...controlsOf(middleware),
    charge: (request: FastifyRequest, units: number) => middleware.charge(request, units),
  };
  return { hook: asHook(middleware, 'portcullisRateLimit', controls), gate };
}

function guardHook(
  gate: GuardGate<FastifyRequest>,
  name: string,
): onRequestHookHandler & FailureLimitControls {
  return asHook(guardMiddleware(gate, fastify), name);
}

/**
 * Gateway auth (docs/design.md#gateway-auth) as a Fastify `onRequest` hook: the lockout is checked before
 * credentials are compared; missing credentials get 401 uncounted; wrong ones are counted (401,
 * then 429 with the `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): onRequestHookHandler & FailureLimitControls {
  return guardHook(
    createAuthGate<FastifyRequest>(options, { where: 'authGuard' }),
    'portcullisAuthGuard',
  );
}

/**
 * Webhook ingress (docs/design.md#webhooks) as a Fastify `onRequest` hook: a right token resets and continues
 * (even during a lockout); wrong or missing tokens get 401, then a plain-text 429 with `Retry-After`.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function webhookGuard(
  options: WebhookGuardOptions,
): onRequestHookHandler & FailureLimitControls {
  return guardHook(createWebhookGate<FastifyRequest>(options), 'portcullisWebhookGuard');
}

/**
 * The concurrency limit (docs/design.md#concurrency) as a Fastify `onRequest` hook: at most `max`
 * requests of one key in flight; the slot is given back when the response closes (finished,
 * failed or abandoned). Refused requests get the JSON 429 with `Retry-After` (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function concurrency(
  options: ConcurrencyOptions,
): onRequestHookHandler & ConcurrencyControls {
  const gate = createConcurrencyGate<FastifyRequest>(options, onLimitedSpec);
  const onLimited = options?.onLimited;
  const middleware = concurrencyMiddleware(gate, fastify, {
    onLimited: onLimited && ((decision, request, reply) => onLimited(request, reply, decision)),
  });
  return asHook(middleware, 'portcullisConcurrency', concurrencyControls(middleware));
}
