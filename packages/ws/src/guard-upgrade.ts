import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '@portcullis/core';
import {
  type AuthGuardOptions,
  callSafely,
  createAuthGate,
  type FailureLimitControls,
  withControls,
  type GateResult,
  isPromise,
  functionOption,
  reportHookError,
  safeLogger,
} from '@portcullis/core/adapter';
import { answerUpgrade, type UpgradeAnswering } from './upgrade-answer.js';
import { checkServers } from './upgrade-checks.js';
import { holdSocket } from './upgrade-socket.js';
import { judgeUpgrade } from './upgrade-verdict.js';

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

/** Reports the guard's own failures (`verify`, routing, closing); a failed hook is a hook error. */
function guardReporter(
  logger: Pick<Logger, 'error'> | undefined,
): (error: unknown, message: string) => void {
  return (error: unknown, message: string): void => {
    if (logger) logger.error({ code: 'PORTCULLIS_UPGRADE_ERROR', err: error }, message);
    else
      process.emitWarning(error instanceof Error ? error : new Error(String(error)), {
        code: 'PORTCULLIS_UPGRADE_ERROR',
        detail: message,
      });
  };
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
  const report = guardReporter(safeLogger(options.logger));
  // A hook runs after the answer is written: its failure is reported, never a crash.
  const hookFailed = (hook: 'onRefused' | 'onAuthenticated') => (err: unknown) =>
    reportHookError(
      options.logger,
      { hook, err },
      `Portcullis guardUpgrade: ${hook} threw or rejected`,
    );
  const refusedHookFailed = hookFailed('onRefused');
  const authenticatedHookFailed = hookFailed('onAuthenticated');
  const answering: UpgradeAnswering<Ws> = {
    server,
    wss,
    report,
    refused: (req, refusal) => callSafely(onRefused, [req, refusal], refusedHookFailed),
    authenticated: (ws, req) => callSafely(onAuthenticated, [ws, req], authenticatedHookFailed),
  };

  const onUpgrade: UpgradeListener = function portcullisGuardUpgrade(req, socket, head) {
    const release = holdSocket(socket);
    const verdict = judgeUpgrade(wss, gate, req);
    if (isPromise(verdict))
      void verdict.then((v) => answerUpgrade(answering, v, req, socket, head, release));
    else answerUpgrade(answering, verdict, req, socket, head, release);
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
