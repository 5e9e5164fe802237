import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type MaybePromise, PortcullisConfigError } from '@portcullis/core';
import {
  type AuthGuardOptions,
  callSafely,
  createAuthGate,
  type FailureLimitControls,
  withControls,
  type GateResult,
  type HttpAnswer,
  isPromise,
  functionOption,
  reportHookError,
  safeLogger,
} from '@portcullis/core/adapter';
import { refuseSocket } from './raw-response.js';

/** Node's `upgrade` listener signature. */
export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** What {@link guardUpgrade} needs of the HTTP(S) server: its `upgrade` event. */
export interface UpgradeServer {
  /** Adds the guard's `upgrade` listener. */
  on(event: 'upgrade', listener: UpgradeListener): unknown;
  /** Removes it again (the function {@link guardUpgrade} returns). */
  off(event: 'upgrade', listener: UpgradeListener): unknown;
  /** Tells whether another `upgrade` listener may take a request this `wss` does not handle. */
  listenerCount(event: 'upgrade'): number;
}

/**
 * What {@link guardUpgrade} needs of the WebSocket server: a `ws` 8 `WebSocketServer` created with
 * `{ noServer: true }` fits.
 */
export interface WebSocketServerLike<Ws> {
  /** Completes the handshake of an accepted request. */
  handleUpgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    callback: (ws: Ws, req: IncomingMessage) => void,
  ): void;
  /** Emits `connection` for an accepted socket. */
  emit(event: 'connection', ws: Ws, req: IncomingMessage): boolean;
  /** Whether this server takes the request (ws checks its `path` option here). */
  shouldHandle?(req: IncomingMessage): boolean | Promise<boolean>;
  /** The server's options; `noServer` must be true so that ws leaves the `upgrade` event to the guard. */
  readonly options?: { readonly noServer?: boolean | undefined } | undefined;
}

/** A refused upgrade as the gate concluded it: the HTTP answer written, the error shape and the decision. */
export type UpgradeRefusal = Extract<GateResult, { ok: false }>;

/** Options of {@link guardUpgrade}. */
export interface GuardUpgradeOptions<Ws = unknown> extends AuthGuardOptions<IncomingMessage> {
  /**
   * Checks the credentials of an upgrade request (a header, a query parameter, a subprotocol…) and
   * says `'ok'`, `'invalid'` or `'missing'`. May return a promise. Keep the comparison constant-time.
   */
  verify: AuthGuardOptions<IncomingMessage>['verify'];
  /**
   * Called after `wss` has emitted `connection` for an accepted socket. A throw or a rejected
   * promise is reported to `logger.error` (else as a process warning), never a crash.
   */
  onAuthenticated?: (ws: Ws, req: IncomingMessage) => unknown;
  /**
   * Called after a refusal (401, 429 or 503) has been written, e.g. for logs and metrics. A throw
   * or a rejected promise is reported like `onAuthenticated`'s.
   */
  onRefused?: (req: IncomingMessage, refusal: UpgradeRefusal) => unknown;
}

type Verdict =
  | { readonly kind: 'elsewhere' }
  | { readonly kind: 'gate'; readonly result: GateResult }
  | { readonly kind: 'error'; readonly error: unknown };

const ELSEWHERE: Verdict = { kind: 'elsewhere' };
const plain = (status: number, body: string): HttpAnswer => ({
  status,
  headers: { 'Content-Type': 'text/plain; charset=utf-8' },
  body,
});
const BAD_REQUEST = plain(400, 'Bad Request');
const SERVER_ERROR = plain(500, 'Internal Server Error');

function hasMethods(value: unknown, ...names: string[]): boolean {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  return names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}

function checkServers(server: unknown, wss: unknown): void {
  if (!hasMethods(server, 'on', 'off', 'listenerCount')) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_SERVER',
      'server',
      'guardUpgrade: "server" must be an HTTP(S) server (an emitter of "upgrade")',
    );
  }
  if (!hasMethods(wss, 'handleUpgrade', 'emit')) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_WSS',
      'wss',
      'guardUpgrade: "wss" must be a ws WebSocketServer',
    );
  }
  const wssOptions = (wss as WebSocketServerLike<unknown>).options;
  if (wssOptions != null && wssOptions.noServer !== true) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_WSS',
      'wss',
      'guardUpgrade: create the WebSocketServer with { noServer: true }; with "server" or "port" ws answers upgrades itself, around the guard',
    );
  }
}

/** Keeps a client's reset from becoming an uncaught exception while the guard owns the socket. */
function destroyOnError(this: Duplex): void {
  this.destroy();
}

/**
 * Takes charge of an upgrade socket's errors until it closes or is handed over; returns the hand-over
 * function. Once the socket has closed, none of the guard's listeners remain on it.
 */
function holdSocket(socket: Duplex): () => void {
  const release = (): void => {
    socket.off('error', destroyOnError);
    socket.off('close', release);
  };
  socket.on('error', destroyOnError);
  socket.once('close', release);
  return release;
}

/**
 * Gates WebSocket handshakes on an HTTP(S) server (docs/design.md#gateway-auth, #browser-origins, #adapters): on every `upgrade`, the
 * credentials are checked through the gateway auth sequence before `wss.handleUpgrade` runs.
 * Accepted: `wss` completes the handshake and emits `connection`, then `onAuthenticated` runs.
 * Refused: a raw `HTTP/1.1` response is written — 401 for missing (not counted) or wrong (counted)
 * credentials, 429 with `Retry-After` and the `authRateLimitedError` JSON body during a lockout —
 * with `Connection: close`, and the socket is closed; `connection` never fires. Requests with an
 * `Origin` use the browser limiter, never loopback-exempt. Synchronous when `verify` and the store
 * are; a client that leaves while a promise is pending gets nothing written and its socket is freed.
 * `verify` throwing or rejecting is answered 500 and reported to `logger.error` (else as a process
 * warning).
 *
 * @param server the HTTP(S) server whose `upgrade` event is guarded
 * @param wss a `ws` WebSocketServer created with `{ noServer: true }`
 * @returns a function that removes the listener and closes the limiters the guard created itself;
 *   it also carries `reconfigure(partial)` and `limiter`, to change the numbers live
 * @throws {PortcullisConfigError} for a wrong or unknown option, or a `wss` not in `noServer` mode
 * @example
 * const wss = new WebSocketServer({ noServer: true });
 * guardUpgrade(server, wss, {
 *   scope: 'shared-secret',
 *   verify: (req) => checkToken(new URL(req.url ?? '/', 'http://x').searchParams.get('token')),
 * });
 */
export function guardUpgrade<Ws>(
  server: UpgradeServer,
  wss: WebSocketServerLike<Ws>,
  options: GuardUpgradeOptions<Ws>,
): (() => void) & FailureLimitControls {
  checkServers(server, wss);
  const gate = createAuthGate<IncomingMessage>(options, {
    where: 'guardUpgrade',
    extra: { onAuthenticated: functionOption, onRefused: functionOption },
  });
  const { onAuthenticated, onRefused } = options;
  const logger = safeLogger(options.logger);

  /** The guard's own failures (`verify`, routing, closing); a failed hook is a hook error. */
  function report(error: unknown, message: string): void {
    if (logger) logger.error({ code: 'PORTCULLIS_UPGRADE_ERROR', err: error }, message);
    else
      process.emitWarning(error instanceof Error ? error : new Error(String(error)), {
        code: 'PORTCULLIS_UPGRADE_ERROR',
        detail: message,
      });
  }

  const failed = (error: unknown): Verdict => ({ kind: 'error', error });
  // A hook runs after the answer is written: its failure is reported, never a crash.
  const hookFailed = (hook: 'onRefused' | 'onAuthenticated') => (err: unknown) =>
    reportHookError(
      options.logger,
      { hook, err },
      `Portcullis guardUpgrade: ${hook} threw or rejected`,
    );
  const refusedHookFailed = hookFailed('onRefused');
  const authenticatedHookFailed = hookFailed('onAuthenticated');

  function afterRouting(handles: boolean, req: IncomingMessage): MaybePromise<Verdict> {
    if (!handles) return ELSEWHERE;
    const result = gate.run(req, req);
    return isPromise(result)
      ? result.then((r): Verdict => ({ kind: 'gate', result: r }))
      : { kind: 'gate', result };
  }

  function judge(req: IncomingMessage): MaybePromise<Verdict> {
    try {
      const handles = wss.shouldHandle === undefined ? true : wss.shouldHandle(req);
      const verdict = isPromise(handles)
        ? handles.then((yes) => afterRouting(yes, req))
        : afterRouting(handles, req);
      return isPromise(verdict) ? verdict.catch(failed) : verdict;
    } catch (error) {
      return failed(error);
    }
  }

  function act(
    verdict: Verdict,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    release: () => void,
  ): void {
    if (verdict.kind === 'error')
      report(
        verdict.error,
        'Portcullis guardUpgrade: checking an upgrade request failed; answered 500',
      );
    // The client left while a promise was pending (reset, or FIN on a half-open upgrade socket):
    // there is no one to answer; free the socket.
    if (socket.destroyed || !socket.readable) {
      socket.destroy();
      return;
    }
    if (verdict.kind === 'elsewhere') {
      // Another listener (another WebSocketServer on its own path) takes it; if none, answer as ws does.
      if (server.listenerCount('upgrade') > 1) {
        release();
        return;
      }
      refuseSocket(socket, BAD_REQUEST);
      return;
    }
    if (verdict.kind === 'error') {
      refuseSocket(socket, SERVER_ERROR);
      return;
    }
    const result = verdict.result;
    if (!result.ok) {
      refuseSocket(socket, result.answer);
      callSafely(onRefused, [req, result], refusedHookFailed);
      return;
    }
    // ws adds its own error handler as the first thing handleUpgrade does.
    release();
    wss.handleUpgrade(req, socket, head, (ws) => {
      wss.emit('connection', ws, req);
      callSafely(onAuthenticated, [ws, req], authenticatedHookFailed);
    });
  }

  const onUpgrade: UpgradeListener = function portcullisGuardUpgrade(req, socket, head) {
    const release = holdSocket(socket);
    const verdict = judge(req);
    if (isPromise(verdict)) void verdict.then((v) => act(v, req, socket, head, release));
    else act(verdict, req, socket, head, release);
  };

  server.on('upgrade', onUpgrade);
  let attached = true;
  function detachGuardUpgrade(): void {
    if (!attached) return;
    attached = false;
    server.off('upgrade', onUpgrade);
    const closing = gate.close();
    if (isPromise(closing))
      closing.catch((error: unknown) =>
        report(error, 'Portcullis guardUpgrade: closing a limiter failed'),
      );
  }
  return withControls(detachGuardUpgrade, {
    reconfigure: gate.reconfigure,
    limiter: gate.limiter,
    close: detachGuardUpgrade,
  });
}
