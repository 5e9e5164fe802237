import type { RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import { func } from '../options.js';
import { isPromise, type MaybePromise } from '../promise.js';
import type { HttpAnswer } from './answer.js';
import type { AdapterOptionSpec } from './gate-options.js';
import {
  type ChargeControl,
  type FailureLimitControls,
  type RequestLimitControls,
  withControls,
} from './controls.js';
import { knownOutcome, outcomeOnce } from './fetch.js';
import {
  chargeControl,
  controlsOf,
  type GuardGate,
  guardMiddleware,
  named,
  type Refusal,
} from './middleware.js';
import type { RequestGate, RequestResult } from './request-gate.js';

/**
 * How a framework whose handlers return a `Response` (Hono; a plain Fetch handler for Bun.serve,
 * Deno.serve, Next.js route handlers, Cloudflare Workers) calls its middleware, for the rules
 * below, as `HttpIdiom` is for frameworks that write to a Node response. A middleware receives up
 * to three arguments (Hono's `c, next`; a wrapped handler's `request, rest, handler`); `Out` is
 * what it resolves to: a `Response`, or nothing where the framework holds the response itself
 * (Hono's `c.res`). Methods are called once per request: keep them small.
 */
export interface FetchIdiom<A, B, C, Req, Out> {
  /** The Fetch API request: its `signal` aborting says the client left. */
  request(a: A, b: B): Request;
  /** What client identity reads (`fetchRawRequest` of the request and the runtime's address). */
  raw(a: A, b: B): RawRequest;
  /** What the options' callbacks receive (`verify`, `key`, `skip`, `requestWasSuccessful`, …). */
  req(a: A, b: B): Req;
  /** Puts a `rateLimit` decision where handlers read it (`c.get('rateLimit')`, `decisionOf`). */
  expose(decision: Decision, a: A, b: B): void;
  /**
   * Prepares headers for a response still to be built, where the framework keeps them (Hono's
   * `c.header`, which `c.json()` and the rest carry); a plain handler has nowhere to: nothing.
   */
  prepare(headers: Readonly<Record<string, string>>, a: A, b: B): void;
  /** A gate's answer as it is: status, every header, body. */
  send(answer: HttpAnswer, a: A, b: B): Out;
  /** Hands the request on (the next middleware, the handler). */
  next(a: A, b: B, c: C): MaybePromise<Out>;
  /**
   * The handler's response, from what `next` resolved to or from where the framework keeps it;
   * read again when the client leaves first (then `handed` is `undefined`).
   */
  response(handed: Out | undefined, a: A): Response;
  /**
   * What an allowed request resolves to: the counter headers added where the handler's response
   * lacks them (a `Response` it built itself bypassed `prepare`).
   */
  finish(response: Response, headers: Readonly<Record<string, string>>, a: A, b: B): Out;
  /** What a refusal `onLimited` answered resolves to (after `prepare` had the same headers). */
  limited(response: Response, headers: Readonly<Record<string, string>>, a: A, b: B): Out;
  /**
   * What the request resolves to when the handler's response is replaced by another (the same
   * status and headers, its body watched: `concurrency`): Hono's `c.res = response`.
   */
  replace(response: Response, a: A, b: B): Out;
}

/** A middleware of a Fetch framework: it always returns a promise, and never throws. */
export type FetchMiddleware<A, B, C, Out> = (a: A, b: B, c: C) => Promise<Out>;

/** Answers a refused request in place of the gate's 429, with the arguments its framework documents. */
export type LimitedResponder<A, B> = (decision: Decision, a: A, b: B) => MaybePromise<Response>;

/** The option Fetch frameworks add to each factory: a Fetch request has no socket to read. */
export const clientAddressSpec: AdapterOptionSpec = { clientAddress: func };

/** A gate's answer as a `Response`, as it is: status, every header, body. */
export function answerResponse(answer: HttpAnswer): Response {
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

/**
 * Adds `headers` to a response, except the fields it set itself. A response with immutable
 * headers (one from `fetch()`, `Response.redirect()`) is copied first.
 */
export function withResponseHeaders(
  response: Response,
  headers: Readonly<Record<string, string>>,
): Response {
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

/**
 * The `rateLimit` rule of a framework whose handlers return a `Response`
 * (docs/design.md#request-limiter), what `rateLimitMiddleware` is for Node responses:
 * - skipped (`skip` said so): handed on, nothing exposed or set;
 * - allowed: the decision exposed, the counter headers prepared, handed on, and added to the
 *   handler's response where it lacks them; with `skipSuccessfulRequests`/`skipFailedRequests`
 *   the outcome is its status, or failed when the handler threw or the request's signal aborted
 *   first (the client left);
 * - refused: the decision exposed; `onLimited` answers, with the counter headers and
 *   `Retry-After` prepared and added to its response, or the gate's answer is sent as it is (429,
 *   or 503 when the store is down).
 * The middleware always returns a promise, and a throw (of `key`, `cost`, the store, the handler,
 * `onLimited`) rejects it. It carries the gate's `reconfigure`, `limiter` and `close`.
 */
export function fetchRateLimit<A, B, C, Req, Out>(
  gate: RequestGate<Req, Response>,
  idiom: FetchIdiom<A, B, C, Req, Out>,
  setup: { readonly name?: string; readonly onLimited?: LimitedResponder<A, B> | undefined } = {},
): FetchMiddleware<A, B, C, Out> & RequestLimitControls & ChargeControl<A, [b?: B]> {
  const tracksOutcome = gate.tracksOutcome;
  const onLimited = setup.onLimited;

  async function allowed(result: RequestResult, a: A, b: B, c: C): Promise<Out> {
    const headers = result.headers;
    idiom.prepare(headers, a, b);
    if (!tracksOutcome) {
      return idiom.finish(idiom.response(await idiom.next(a, b, c), a), headers, a, b);
    }
    let handed: Out | undefined;
    const settle = outcomeOnce(idiom.request(a, b).signal, (status) =>
      gate.track(result, knownOutcome(status), idiom.req(a, b), idiom.response(handed, a)),
    );
    try {
      handed = await idiom.next(a, b, c);
    } catch (error) {
      settle(undefined);
      throw error;
    }
    const response = idiom.response(handed, a);
    settle(response.status);
    return idiom.finish(response, headers, a, b);
  }

  function settle(result: RequestResult | undefined, a: A, b: B, c: C): Promise<Out> {
    if (result === undefined) return Promise.resolve(idiom.next(a, b, c));
    idiom.expose(result.decision, a, b);
    return result.ok ? allowed(result, a, b, c) : fetchRefuse(result, idiom, onLimited, a, b);
  }

  // Not an async function: with the memory store the decision is synchronous, and an async
  // wrapper around allowed()'s promise would cost every request another promise and tick.
  return withControls(runFetchGate(gate, idiom, settle, setup.name), {
    ...controlsOf(gate),
    charge: chargeControl(gate, idiom),
  });
}

/**
 * A Fetch middleware that runs `gate` on each request and hands its result to `settle`; it
 * always returns a promise, and a throw (of `key`, the store, the handler) rejects it. With
 * `withSignal` the gate gets the request's signal (a queued request stops waiting when it aborts).
 */
export function runFetchGate<A, B, C, Req, R, Out>(
  gate: { run(raw: RawRequest, req: Req, signal?: AbortSignal): MaybePromise<R> },
  idiom: FetchIdiom<A, B, C, Req, Out>,
  settle: (result: R, a: A, b: B, c: C) => Promise<Out>,
  name: string | undefined,
  withSignal = false,
): FetchMiddleware<A, B, C, Out> {
  return named(function portcullisMiddleware(a: A, b: B, c: C): Promise<Out> {
    try {
      const signal = withSignal ? idiom.request(a, b).signal : undefined;
      const result = gate.run(idiom.raw(a, b), idiom.req(a, b), signal);
      return isPromise(result) ? result.then((r) => settle(r, a, b, c)) : settle(result, a, b, c);
    } catch (error) {
      return Promise.reject(error);
    }
  }, name);
}

/**
 * Answers a refusal by returning a `Response`: `onLimited`'s, with the refusal's headers prepared
 * and added to it, or the gate's answer as `send` builds it.
 */
export async function fetchRefuse<A, B, C, Req, Out>(
  result: Refusal,
  idiom: FetchIdiom<A, B, C, Req, Out>,
  onLimited: LimitedResponder<A, B> | undefined,
  a: A,
  b: B,
): Promise<Out> {
  // A deny is the operator's answer, not a limit's: onLimited answers limits only.
  if (onLimited === undefined || result.decision.reason === 'denied')
    return idiom.send(result.answer as HttpAnswer, a, b);
  idiom.prepare(result.headers, a, b);
  return idiom.limited(await onLimited(result.decision, a, b), result.headers, a, b);
}

/**
 * The guard rule (auth and webhook gates) of a framework whose handlers return a `Response`:
 * `guardMiddleware` with nothing ever sent before it (such a framework answers by returning), a
 * refusal resolving to the gate's answer as `send` builds it, and a throw rejecting the promise
 * the middleware always returns. It carries the gate's `reconfigure`, `limiter` and `close`.
 */
export function fetchGuard<A, B, C, Req, Out>(
  gate: GuardGate<Req>,
  idiom: FetchIdiom<A, B, C, Req, Out>,
  setup: { readonly name?: string } = {},
): FetchMiddleware<A, B, C, Out> & FailureLimitControls {
  const middleware = guardMiddleware<A, B, C, Req>(gate, {
    raw: (a, b) => idiom.raw(a, b),
    req: (a, b) => idiom.req(a, b),
    sent: () => false,
    setHeaders: (headers, a, b) => idiom.prepare(headers, a, b),
    send: (answer, a, b) => idiom.send(answer, a, b),
    next: (a, b, c) => idiom.next(a, b, c),
    fail(error) {
      throw error;
    },
  });
  return withControls(
    named(async function portcullisGuard(a: A, b: B, c: C): Promise<Out> {
      return middleware(a, b, c) as MaybePromise<Out>;
    }, setup.name),
    controlsOf(gate),
  );
}
