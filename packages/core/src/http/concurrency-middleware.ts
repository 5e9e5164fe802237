import type { MaybePromise } from '../promise.js';
import type {
  ConcurrencyGate,
  ConcurrencyGateOptions,
  ConcurrencyResult,
} from './concurrency-gate.js';
import {
  type FetchIdiom,
  type FetchMiddleware,
  fetchRefuse,
  type LimitedResponder,
  runFetchGate,
} from './fetch-middleware.js';
import { withControls } from './controls.js';
import {
  type HttpIdiom,
  type LimitedHandler,
  type Middleware,
  refuse,
  runGate,
} from './middleware.js';

/** The part of a Node `ServerResponse` watched for the end of a request's slot. */
export interface ClosingResponse {
  /** True once the response (or its connection) closed: `close` will not come again. */
  readonly closed?: boolean;
  /** True once the stream was destroyed (the client went away). */
  readonly destroyed?: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** What a `concurrency` middleware needs of its framework beyond {@link HttpIdiom}. */
export interface ConcurrencyIdiom<A, B, C, Req> extends HttpIdiom<A, B, C, Req> {
  /** The Node response behind the call: its `close` (finished or abandoned) releases the slot. */
  closing(a: A, b: B): ClosingResponse;
}

/** The options of an adapter's `concurrency`: the gate's, plus `onLimited` in the framework's terms. */
export interface AdapterConcurrencyOptions<Req, OnLimited> extends ConcurrencyGateOptions<Req> {
  /**
   * Answers a refused request instead of the default JSON 429 (or 503 when the store is down,
   * `decision.reason === 'store-error'`); `Retry-After` is already set.
   * @default the core's 429 answer
   */
  onLimited?: OnLimited;
}

/** What a concurrency middleware carries: its limiter, and `close` for the store it built. */
export type ConcurrencyControls = Pick<ConcurrencyGate<unknown>, 'limiter' | 'close'>;

/** The controls of a concurrency gate or middleware, to hang on a function built around it. */
export function concurrencyControls(of: ConcurrencyControls): ConcurrencyControls {
  return { limiter: of.limiter, close: of.close };
}

/** Whether the response closed already (finished, or its client went away). */
function gone(res: ClosingResponse): boolean {
  return res.closed === true || res.destroyed === true;
}

/** A signal that aborts when `res` closes: a queued request stops waiting for a client gone. */
function leaving(res: ClosingResponse): AbortSignal {
  const left = new AbortController();
  if (gone(res)) left.abort();
  else res.once('close', () => left.abort());
  return left.signal;
}

function withGate<F extends object>(fn: F, gate: ConcurrencyGate<never>): F & ConcurrencyControls {
  return withControls(fn, concurrencyControls(gate));
}

/**
 * The `concurrency` rule of every adapter whose middleware writes to a Node response
 * (docs/design.md#concurrency):
 * - skipped (`skip` said so): handed on, no slot taken;
 * - allowed: the slot is released on the response's `close` (Node emits it once the response
 *   finished, failed or its client went away, so an error or an abort never leaks a slot; a
 *   response closed before the decision came releases at once), then handed on;
 * - refused: when a response was already sent, nothing more; else `onLimited` answers (with
 *   `Retry-After` set), or the gate's 429 (503 when the store is down) is written as it is.
 * Synchronous when the gate is; a rejection goes to the framework's error path.
 */
export function concurrencyMiddleware<A, B, C, Req>(
  gate: ConcurrencyGate<Req>,
  idiom: ConcurrencyIdiom<A, B, C, Req>,
  setup: { readonly name?: string; readonly onLimited?: LimitedHandler<A, B, C> | undefined } = {},
): Middleware<A, B, C> & ConcurrencyControls {
  const onLimited = setup.onLimited;
  function settle(result: ConcurrencyResult | undefined, a: A, b: B, c: C): unknown {
    if (result === undefined) return idiom.next(a, b, c);
    if (result.ok) {
      const res = idiom.closing(a, b);
      if (gone(res)) result.release();
      else res.once('close', result.release);
      return idiom.next(a, b, c);
    }
    // A queued request whose client left while it waited: nobody is left to answer.
    if (gate.queues && gone(idiom.closing(a, b))) return undefined;
    return refuse(result, idiom, onLimited, a, b, c);
  }
  const signalOf = gate.queues ? (a: A, b: B) => leaving(idiom.closing(a, b)) : undefined;
  return withGate(
    runGate(gate, idiom, settle, setup.name ?? 'portcullisConcurrency', signalOf),
    gate as ConcurrencyGate<never>,
  );
}

/**
 * The `concurrency` rule of a framework whose handlers return a `Response`: the slot is held
 * until the response's body has been read to its end or cancelled, the request's signal aborts
 * (the client left), the handler throws, or the response is garbage-collected unread; a response
 * without a body releases at once. A refusal is answered as on Node (`onLimited`, or the gate's
 * 429/503). The middleware always returns a promise; a throw rejects it.
 */
export function fetchConcurrency<A, B, C, Req, Out>(
  gate: ConcurrencyGate<Req>,
  idiom: FetchIdiom<A, B, C, Req, Out>,
  setup: { readonly name?: string; readonly onLimited?: LimitedResponder<A, B> | undefined } = {},
): FetchMiddleware<A, B, C, Out> & ConcurrencyControls {
  const onLimited = setup.onLimited;

  async function allowed(result: ConcurrencyResult, a: A, b: B, c: C): Promise<Out> {
    const signal = idiom.request(a, b).signal;
    if (signal.aborted) result.release();
    else signal.addEventListener('abort', result.release, { once: true });
    let handed: Out | undefined;
    try {
      handed = await idiom.next(a, b, c);
    } catch (error) {
      result.release();
      throw error;
    }
    return idiom.replace(releasedAtEnd(idiom.response(handed, a), result.release), a, b);
  }

  function settle(result: ConcurrencyResult | undefined, a: A, b: B, c: C): Promise<Out> {
    if (result === undefined) return Promise.resolve(idiom.next(a, b, c));
    return result.ok ? allowed(result, a, b, c) : fetchRefuse(result, idiom, onLimited, a, b);
  }

  return withGate(
    runFetchGate(gate, idiom, settle, setup.name, gate.queues),
    gate as ConcurrencyGate<never>,
  );
}

/** Releases held for bodies nobody read: a body collected unread gives its slot back. */
const unread = new FinalizationRegistry<() => void>((release) => release());

/**
 * `response` with a body that calls `release` once it has been read to its end, failed or been
 * cancelled (a response without a body releases at once). Status and headers are kept.
 */
function releasedAtEnd(response: Response, release: () => void): Response {
  const body = response.body;
  if (body === null) {
    release();
    return response;
  }
  const reader = body.getReader();
  const token = {};
  const done = () => {
    unread.unregister(token);
    release();
  };
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      try {
        const chunk = await reader.read();
        if (chunk.done) {
          done();
          controller.close();
        } else controller.enqueue(chunk.value);
      } catch (error) {
        done();
        controller.error(error);
      }
    },
    cancel(reason): MaybePromise<void> {
      done();
      return reader.cancel(reason);
    },
  });
  unread.register(stream, release, token);
  return new Response(stream, response);
}
