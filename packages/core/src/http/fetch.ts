import type { RawRequest } from '../client.js';
import type { Logger } from '../events.js';
import type { Warnings } from '../warnings.js';
import type { RawResponse } from './request-gate.js';
import { warnOnce } from './warn-once.js';

/** The part of a Fetch API `Headers` object read here. */
export interface FetchHeaders {
  forEach(callback: (value: string, name: string) => void): void;
}

/** A `RawRequest` built for a Fetch request; its socket holds the address the runtime reported. */
interface BuiltRequest extends RawRequest {
  readonly socket: { readonly remoteAddress: string | undefined };
}

const built = new WeakMap<object, BuiltRequest>();

/**
 * The `RawRequest` of a Fetch API request, which has no socket: `address` is the peer the runtime
 * reported (`server.requestIP(req)` on Bun, `info.remoteAddr` on Deno, …; `undefined` when it has
 * none, which leaves the client unresolved), and the headers are Fetch's (lower-case names, a
 * repeated header joined with ", " as Node joins it, so a repeated Origin still counts as one
 * invalid origin). One `request` gives one object, so limiters stacked on a request recognise it.
 */
export function fetchRawRequest(
  request: { readonly headers: FetchHeaders },
  address: string | undefined,
): RawRequest {
  const known = built.get(request);
  if (known !== undefined && known.socket.remoteAddress === address) return known;
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const raw: BuiltRequest = { socket: { remoteAddress: address }, headers };
  built.set(request, raw);
  return raw;
}

/**
 * A response whose end is already known, for `RequestGate.track` over a handler that returns a
 * `Response`: `status` once the handler answered, `undefined` when it never did (it threw, or the
 * client left first), which counts as an aborted request.
 */
export function knownOutcome(status: number | undefined): RawResponse {
  const finished = status !== undefined;
  return {
    statusCode: status ?? 0,
    writableFinished: finished,
    once(event, listener) {
      if (event === (finished ? 'finish' : 'close')) listener();
      return this;
    },
  };
}

/**
 * Settles an allowed request's outcome once: the returned function takes the handler's status
 * (`undefined` when it threw); an abort of `signal` before then (the client left: Bun, Deno and
 * `@hono/node-server` abort `request.signal`) settles it as aborted.
 */
export function outcomeOnce(
  signal: AbortSignal | undefined,
  settle: (status: number | undefined) => void,
): (status: number | undefined) => void {
  let open = true;
  const finish = (status: number | undefined): void => {
    if (!open) return;
    open = false;
    signal?.removeEventListener('abort', aborted);
    settle(status);
  };
  const aborted = () => finish(undefined);
  if (signal?.aborted) finish(undefined);
  else signal?.addEventListener('abort', aborted);
  return finish;
}

/**
 * The one-time warning of an adapter that could not learn the client address of a request: such
 * requests share the `unknown` bucket, so the operator must be told once how to fix it.
 */
export function unresolvedAddressWarning(
  logger: Logger | undefined,
  where: string,
  fix: string,
  warnings?: Warnings,
): () => void {
  return warnOnce(
    logger,
    warnings,
    { code: 'PORTCULLIS_NO_CLIENT_ADDRESS' },
    `Portcullis: ${where} could not learn the client address of a request; such requests share one "unknown" bucket. ${fix}`,
  );
}
