import {
  createSessionCreationLimiter,
  type SessionCreationLimiter,
  type SessionCreationLimiterOptions,
} from '@portcullis/core';
import {
  exclusiveLimiter,
  functionOption,
  integerOption,
  isPromise,
  methodsOption,
  sessionCreationLimiterSpec,
  withoutUndefined,
} from '@portcullis/core/adapter';
import { checkMethod } from './method-name.js';
import { compileMethodPatterns, methodList } from './patterns.js';
import type { Dispatcher, Wrapped } from './types.js';
import { wrapperOptions } from './wrapper-options.js';

/** The ACP methods that open a session, the default of `withSessionCreationLimit`'s `methods`. */
export const sessionOpeningMethods = Object.freeze(['session/new', 'session/load'] as const);

/**
 * Options of {@link withSessionCreationLimit}. All optional. Those it shares with core's limiter
 * (`limit`, `windowMs`, `clock`, `timers`, `dryRun`, `logger`) configure the limiter created here.
 */
export interface SessionCreationLimitOptions<Params = unknown, Ctx = unknown>
  extends SessionCreationLimiterOptions {
  /** Methods that open a session (exact names or `namespace.*`). @default sessionOpeningMethods */
  methods?: readonly string[];
  /**
   * Whether the call re-opens a session that already exists (then it is free). May be async.
   * Throwing (or rejecting) fails the call without charging it.
   * @default every call of a listed method creates a session
   */
  isKnown?: (params: Params, ctx: Ctx, method: string) => boolean | Promise<boolean>;
  /**
   * The limiter to charge. Not together with the limiter's own options (`limit`, `windowMs`,
   * `clock`, `timers`, `dryRun`, `logger`). @default a new one
   */
  limiter?: SessionCreationLimiter;
}

/** A dispatcher wrapped by {@link withSessionCreationLimit}. */
export interface SessionCreationDispatcher<Params = unknown, Ctx = unknown, Result = unknown> {
  /**
   * Dispatches the call; always returns a promise. A session-opening call for an unknown session
   * first spends one creation, or rejects with core's `Error` (`ACP session creation rate limit
   * exceeded for <method>; retry after <n>s.`) without calling the inner dispatcher. A method that
   * is not a usable name rejects with an `INVALID_REQUEST` `PortcullisRpcError`, never dispatched.
   */
  (method: string, params: Params, ctx: Ctx): Wrapped<Result>;
  /** The limiter charged (its state lives as long as it does). */
  readonly limiter: SessionCreationLimiter;
}

const WHERE = 'withSessionCreationLimit';

/** The limiter's own options: given with `limiter`, they would be silently ignored. */
const LIMITER_OPTIONS = Object.keys(sessionCreationLimiterSpec);

const sessionSpec = {
  methods: methodList,
  isKnown: functionOption,
  limiter: methodsOption<SessionCreationLimiter>('consume'),
  ...sessionCreationLimiterSpec,
  // Only an integer here: a span core refuses is refused by the limiter, under its own name.
  windowMs: integerOption(1),
};

/**
 * Wires core's session-creation limiter (docs/design.md#session-creation) into a dispatcher: a call of a
 * session-opening method is charged one creation unless `isKnown` says it re-opens an existing
 * session, which is free. When the window is spent the call is rejected with core's plain `Error`,
 * whose message is exactly `ACP session creation rate limit exceeded for <method>; retry after <n>s.`
 * The wrapped dispatcher always returns a promise; nothing is thrown synchronously.
 * @param dispatch the dispatcher to protect
 * @param options see {@link SessionCreationLimitOptions}
 * @throws {PortcullisConfigError} for a wrong or unknown option (`ERR_PORTCULLIS_*`)
 * @example
 * const guarded = withSessionCreationLimit(dispatch, {
 *   isKnown: (params) => sessions.has((params as { sessionId?: string }).sessionId ?? ''),
 * });
 */
export function withSessionCreationLimit<Params, Ctx, Result>(
  dispatch: Dispatcher<Params, Ctx, Result>,
  options?: SessionCreationLimitOptions<Params, Ctx>,
): SessionCreationDispatcher<Params, Ctx, Result> {
  const o = wrapperOptions(dispatch, options, sessionSpec, WHERE);
  exclusiveLimiter(o, LIMITER_OPTIONS, WHERE);
  const { limit, windowMs, clock, timers, dryRun, logger } = o;
  const limiter =
    o.limiter ??
    createSessionCreationLimiter(
      withoutUndefined({ limit, windowMs, clock, timers, dryRun, logger }),
    );
  const matches = compileMethodPatterns(o.methods ?? sessionOpeningMethods);
  const isKnown = o.isKnown as SessionCreationLimitOptions<Params, Ctx>['isKnown'];

  const guarded: Dispatcher<Params, Ctx, Wrapped<Result>> = async function sessionCreationDispatch(
    method,
    params,
    ctx,
  ): Wrapped<Result> {
    checkMethod(method);
    if (matches(method)) {
      // An error of isKnown fails the call before anything is charged. A synchronous answer is
      // not awaited, so check, charge and dispatch stay one step (no other call in between).
      let known = isKnown === undefined ? false : isKnown(params, ctx, method);
      if (isPromise(known)) known = await known;
      if (known !== true) limiter.consume(method);
    }
    return dispatch(method, params, ctx) as Awaited<Result>;
  };

  return Object.assign(guarded, { limiter });
}
