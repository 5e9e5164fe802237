import type { RawRequest } from '../client.js';
import type { Decision } from '../decision.js';
import { func } from '../options.js';
import { isPromise, type MaybePromise } from '../promise.js';
import type { GateResult, HttpAnswer } from './answer.js';
import type { AuthGate } from './auth-gate.js';
import type { AdapterOptionSpec } from './gate-options.js';
import {
  type ChargeControl,
  type FailureLimitControls,
  type RequestLimitControls,
  withControls,
} from './controls.js';
import type { RawResponse, RequestGate, RequestGateOptions } from './request-gate.js';

/**
 * How one framework calls its middleware, for the rules below that every adapter shares. A
 * middleware receives up to three arguments (`a`, `b`, `c`: Express's `req, res, next`, Fastify's
 * `request, reply, done`, Koa's `ctx, next`); each method gets the ones it needs. Methods are
 * called once per request: keep them small (they are inlined on the hot path).
 */
export interface HttpIdiom<A, B, C, Req> {
  /** The Node request behind the call (client identity reads its socket and headers). */
  raw(a: A, b: B): RawRequest;
  /** What the options' callbacks receive (`verify`, `key`, `skip`, …). */
  req(a: A, b: B): Req;
  /** Whether a response was already sent (an earlier middleware answered): nothing more is written. */
  sent(a: A, b: B): boolean;
  /** Sets headers on the response to come. */
  setHeaders(headers: Readonly<Record<string, string>>, a: A, b: B): void;
  /** Writes a gate's answer as it is (status, every header, body) and ends the response. */
  send(answer: HttpAnswer, a: A, b: B): unknown;
  /** Hands the request on (the next middleware, the route). */
  next(a: A, b: B, c: C): unknown;
  /** Hands an error to the framework: a rejected `verify`, `key`, `cost` or store call. */
  fail(error: unknown, a: A, b: B, c: C): unknown;
}

/** What a `rateLimit` middleware needs of its framework beyond {@link HttpIdiom}. */
export interface RateLimitIdiom<A, B, C, Req, Res> extends HttpIdiom<A, B, C, Req> {
  /** Puts the decision where the handlers read it (`req.rateLimit`, `ctx.state.rateLimit`). */
  expose(decision: Decision, a: A, b: B): void;
  /** The Node response behind the call, watched for the outcome (`skipSuccessfulRequests`). */
  rawRes(a: A, b: B): RawResponse;
  /** What `requestWasSuccessful` receives as the response. */
  res(a: A, b: B): Res;
}

/** A middleware of up to three arguments. */
export type Middleware<A, B, C> = (a: A, b: B, c: C) => unknown;

/** The option every adapter's `rateLimit` adds to the gate's: `onLimited`, a function. */
export const onLimitedSpec: AdapterOptionSpec = { onLimited: func };

/**
 * The user's `onLimited` of an adapter whose middleware writes to a response: the framework's own
 * arguments (named by the adapter: `[req: Request, res: Response]`), then the refusal. It answers
 * the request itself.
 */
export type OnLimitedHook<Args extends unknown[]> = (
  ...args: [...Args, decision: Decision]
) => void | Promise<void>;

/**
 * The options of a `rateLimit` middleware that writes to a response (Express, Koa, Fastify): the
 * request gate's, plus `onLimited` in the framework's own signature.
 */
export interface AdapterRateLimitOptions<Req, Res, OnLimited> extends RequestGateOptions<Req, Res> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down,
   * `decision.reason === 'store-error'`). The counter headers and `Retry-After` are already set.
   * @default the core's 429 answer
   */
  onLimited?: OnLimited;
}

/** Sets the name a middleware shows in stack traces (`portcullisAuthGuard`, …). */
export function named<F extends object>(fn: F, name: string | undefined): F {
  if (name !== undefined) Object.defineProperty(fn, 'name', { value: name, configurable: true });
  return fn;
}

/** What a gate's owner reaches through the middleware (`withControls` hangs them on it). */
interface Controls {
  readonly reconfigure: unknown;
  readonly limiter: unknown;
  readonly close: unknown;
}

/**
 * The controls of a gate or middleware, to hang on a middleware built around it: whoever mounted
 * the outer function must still reach the limiter.
 */
export function controlsOf<G extends Controls>(of: G): Pick<G, keyof Controls> {
  return { reconfigure: of.reconfigure, limiter: of.limiter, close: of.close };
}

/**
 * The `charge` a `rateLimit` middleware carries (Fetch-style ones too): the request as the adapter
 * names it, turned into what the gate's `charge` takes.
 */
export function chargeControl<A, B, Req>(
  gate: Pick<RequestGate<Req, never>, 'charge'>,
  idiom: { raw(a: A, b: B): RawRequest; req(a: A, b: B): Req },
): ChargeControl<A, [b?: B]>['charge'] {
  return (a, units, b) => gate.charge(idiom.raw(a, b as B), idiom.req(a, b as B), units);
}

/** The gate an auth or webhook guard runs (both gates fit). */
export type GuardGate<Req> = Pick<AuthGate<Req>, 'run' | 'reconfigure' | 'limiter' | 'close'>;

/**
 * A middleware that runs `gate` on each request and hands its result to `settle`: synchronously
 * when the gate is (the memory store), a rejection to the framework's error path. `signalOf`
 * gives the gate a signal that aborts when the client leaves (a queued request stops waiting).
 */
export function runGate<A, B, C, Req, R>(
  gate: { run(raw: RawRequest, req: Req, signal?: AbortSignal): MaybePromise<R> },
  idiom: HttpIdiom<A, B, C, Req>,
  settle: (result: R, a: A, b: B, c: C) => unknown,
  name: string,
  signalOf?: (a: A, b: B) => AbortSignal,
): Middleware<A, B, C> {
  return named(function portcullisMiddleware(a: A, b: B, c: C): unknown {
    const result = gate.run(idiom.raw(a, b), idiom.req(a, b), signalOf?.(a, b));
    if (!isPromise(result)) return settle(result, a, b, c);
    return result.then((r) => settle(r, a, b, c)).catch((error) => idiom.fail(error, a, b, c));
  }, name);
}

/** What every refusal carries: the decision, its headers, and the gate's own answer. */
export interface Refusal {
  readonly decision: Decision;
  readonly headers: Readonly<Record<string, string>>;
  readonly answer: HttpAnswer | undefined;
}

/**
 * Answers a refusal on a Node response: nothing when a response was already sent (there is no
 * one left to answer); else `onLimited`, with the refusal's headers already set, or the gate's
 * answer written as it is. A rejected `onLimited` goes to the framework's error path.
 */
export function refuse<A, B, C, Req>(
  result: Refusal,
  idiom: HttpIdiom<A, B, C, Req>,
  onLimited: LimitedHandler<A, B, C> | undefined,
  a: A,
  b: B,
  c: C,
): unknown {
  if (idiom.sent(a, b)) return undefined;
  // A deny is the operator's answer, not a limit's: onLimited answers limits only.
  if (onLimited === undefined || result.decision.reason === 'denied')
    return idiom.send(result.answer as HttpAnswer, a, b);
  idiom.setHeaders(result.headers, a, b);
  const done = onLimited(result.decision, a, b, c);
  return isPromise(done) ? done.then(undefined, (error) => idiom.fail(error, a, b, c)) : done;
}

/**
 * The guard rule of every adapter (docs/design.md#adapters): the gate decides; a pass hands the
 * request on, a refusal is written as the gate answered it (401, 429 or 503) unless a response
 * was already sent, and the route is not run. Synchronous when the gate is (the memory store); a
 * rejection goes to the framework's error path. The middleware carries the gate's
 * `reconfigure`, `limiter` and `close`.
 */
export function guardMiddleware<A, B, C, Req>(
  gate: GuardGate<Req>,
  idiom: HttpIdiom<A, B, C, Req>,
  setup: { readonly name?: string } = {},
): Middleware<A, B, C> & FailureLimitControls {
  function settle(result: GateResult, a: A, b: B, c: C): unknown {
    if (result.ok) return idiom.next(a, b, c);
    return idiom.sent(a, b) ? undefined : idiom.send(result.answer, a, b);
  }
  return withControls(
    runGate(gate, idiom, settle, setup.name ?? 'portcullisGuard'),
    controlsOf(gate),
  );
}

/**
 * Answers a refused request in place of the gate's 429 (the adapter calls the user's
 * `onLimited` with the arguments its framework documents). A rejection goes to the framework's
 * error path.
 */
export type LimitedHandler<A, B, C> = (
  decision: Decision,
  a: A,
  b: B,
  c: C,
) => MaybePromise<unknown>;

/**
 * The `rateLimit` rule of every adapter whose middleware writes to a response (docs/design.md#request-limiter):
 * - skipped (`skip` said so): handed on, nothing exposed or set;
 * - allowed: the decision exposed, the counter headers set (unless a response was already sent),
 *   the outcome watched when `skipSuccessfulRequests`/`skipFailedRequests` need it, handed on;
 * - refused: the decision exposed; when a response was already sent, nothing more (there is no one
 *   left to answer, and the route is not run); else `onLimited` answers, with the counter headers
 *   and `Retry-After` already set, or the gate's answer is written as it is (429, or 503 when the
 *   store is down).
 * Synchronous when the gate is; a rejection goes to the framework's error path. The middleware
 * carries the gate's `reconfigure`, `limiter` and `close`.
 */
export function rateLimitMiddleware<A, B, C, Req, Res>(
  gate: RequestGate<Req, Res>,
  idiom: RateLimitIdiom<A, B, C, Req, Res>,
  setup: { readonly name?: string; readonly onLimited?: LimitedHandler<A, B, C> | undefined } = {},
): Middleware<A, B, C> & RequestLimitControls & ChargeControl<A, [b?: B]> {
  const tracksOutcome = gate.tracksOutcome;
  const onLimited = setup.onLimited;
  function settle(
    result: Awaited<ReturnType<RequestGate<Req, Res>['run']>>,
    a: A,
    b: B,
    c: C,
  ): unknown {
    if (result === undefined) return idiom.next(a, b, c);
    idiom.expose(result.decision, a, b);
    if (result.ok) {
      if (!idiom.sent(a, b)) idiom.setHeaders(result.headers, a, b);
      if (tracksOutcome) gate.track(result, idiom.rawRes(a, b), idiom.req(a, b), idiom.res(a, b));
      return idiom.next(a, b, c);
    }
    return refuse(result, idiom, onLimited, a, b, c);
  }
  return withControls(runGate(gate, idiom, settle, setup.name ?? 'portcullisRateLimit'), {
    ...controlsOf(gate),
    charge: chargeControl(gate, idiom),
  });
}
