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
  type RequestGate,
  type RequestResult,
} from '@portcullis/core';
import type {
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
} from 'fastify';
import type { AuthGuardOptions, RateLimitOptions, WebhookGuardOptions } from './options.js';

const onLimitedSpec = { onLimited: functionOption };

/** Sets every header of a record; `reply.headers(record)` would allocate a key array per call. */
function setHeaders(reply: FastifyReply, headers: Readonly<Record<string, string>>): void {
  for (const name in headers) reply.header(name, headers[name] as string);
}

/** Writes a core answer as it is: status, every header, body. */
function sendAnswer(reply: FastifyReply, answer: HttpAnswer): void {
  setHeaders(reply.code(answer.status), answer.headers);
  reply.send(answer.body);
}

/**
 * The general request limiter (docs/design.md#request-limiter) as a Fastify `onRequest` hook. Allowed requests get the
 * counter headers and `request.rateLimit`; refused ones the JSON 429 (or `onLimited`).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function rateLimit(options?: RateLimitOptions): onRequestHookHandler & RequestLimitControls {
  const { hook, gate } = createRateLimitHook(options);
  return withControls(hook, { reconfigure: gate.reconfigure, limiter: gate.limiter });
}

/** Builds the {@link rateLimit} hook and returns its gate too (the plugin closes it on shutdown). */
export function createRateLimitHook(options: RateLimitOptions | undefined): {
  readonly hook: onRequestHookHandler;
  readonly gate: RequestGate<FastifyRequest, FastifyReply>;
} {
  const gate = createRequestGate<FastifyRequest, FastifyReply>(options, onLimitedSpec);
  const onLimited = options?.onLimited;

  function applyRateLimit(
    result: RequestResult | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    if (result === undefined) {
      done();
    } else if (result.ok) {
      request.rateLimit = result.decision;
      setHeaders(reply, result.headers);
      if (gate.tracksOutcome) gate.track(result, reply.raw, request, reply);
      done();
    } else if (onLimited === undefined) {
      request.rateLimit = result.decision;
      sendAnswer(reply, result.answer as HttpAnswer);
    } else {
      request.rateLimit = result.decision;
      setHeaders(reply, result.headers);
      const sent = onLimited(request, reply, result.decision);
      if (isPromise(sent)) sent.then(undefined, done);
    }
  }

  return {
    hook: function portcullisRateLimit(
      request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ): void {
      const result = gate.run(request.raw, request);
      if (isPromise(result))
        result.then((r) => applyRateLimit(r, request, reply, done)).catch(done);
      else applyRateLimit(result, request, reply, done);
    },
    gate,
  };
}

/** Continues on success; otherwise sends the gate's answer (401, 429 or 503). */
function applyGate(result: GateResult, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (result.ok) done();
  else sendAnswer(reply, result.answer);
}

/**
 * Gateway auth (docs/design.md#gateway-auth) as a Fastify `onRequest` hook: the lockout is checked before
 * credentials are compared; missing credentials get 401 uncounted; wrong ones are counted (401,
 * then 429 with the `authRateLimitedError` body); right ones reset the client's count and continue.
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function authGuard(options: AuthGuardOptions): onRequestHookHandler & FailureLimitControls {
  const gate = createAuthGate<FastifyRequest>(options, { where: 'authGuard' });
  return withControls(
    function portcullisAuthGuard(
      request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ): void {
      const result = gate.run(request.raw, request);
      if (isPromise(result)) result.then((r) => applyGate(r, reply, done)).catch(done);
      else applyGate(result, reply, done);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
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
  const gate = createWebhookGate<FastifyRequest>(options);
  return withControls(
    function portcullisWebhookGuard(
      request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ): void {
      const result = gate.run(request.raw, request);
      if (isPromise(result)) result.then((r) => applyGate(r, reply, done)).catch(done);
      else applyGate(result, reply, done);
    },
    { reconfigure: gate.reconfigure, limiter: gate.limiter },
  );
}
