// The WebSocket side: one `ws` server without its own HTTP server (http.js hands it the upgrades).
// A socket's life is two phases. Until `connect` is accepted its first frame goes to the handshake
// (connect.js), a timeout closes it and further frames are dropped; after that every frame is an
// RPC request, answered with the method's result or its error shape. The set of authenticated
// sockets is kept here too, for the restart event and the status page's connection counts.
import { isPromise } from '@portcullis/core/adapter';
import { controlPlaneWriteMethods, isPortcullisRpcError } from '@portcullis/rpc';
import { WebSocketServer } from 'ws';
import { invalidRequest, isObject, isRequest, parseFrame, sendError } from './protocol.js';
import { SESSION_METHOD } from './rpc.js';

/** @import { Timers } from '@portcullis/core' */
/** @import { ClientResolver } from '@portcullis/core/adapter' */
/** @import { IncomingMessage } from 'node:http' */
/** @import { WebSocket } from 'ws' */
/** @import { Connection, FirstFrame } from './connect.js' */
/** @import { JsonLogger } from './logger.js' */
/** @import { StatusBoard } from './status.js' */

/** A socket that has not sent a valid `connect` by then is closed (1008). */
const CONNECT_TIMEOUT_MS = 10_000;
/** Largest WebSocket frame accepted. */
const MAX_PAYLOAD = 256 * 1024;

/**
 * @param {{
 *   handshake: (ws: WebSocket, req: IncomingMessage, frame: unknown, at: FirstFrame) => void,
 *   dispatch: (method: string, params: unknown, conn: Connection) => unknown,
 *   resolveClient: ClientResolver,
 *   timers: Timers,
 *   logger: JsonLogger,
 *   board: Pick<StatusBoard, 'changed' | 'allowed'>,
 * }} options
 */
export function createSockets(options) {
  const { handshake, dispatch, resolveClient, timers, logger, board } = options;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD });
  /** @type {Set<WebSocket>} */
  const authenticated = new Set();
  let awaitingConnect = 0;
  let connSeq = 0;

  wss.on('connection', function onConnection(ws, req) {
    const connId = `c${++connSeq}`;
    const client = resolveClient(req);
    /** @type {Connection | undefined} */
    let conn;
    let refused = false;
    let connecting = false;
    let pending = true;
    awaitingConnect += 1;
    // Counted down exactly once, whichever comes first: accepted, or closed before that.
    const settle = () => {
      if (pending) {
        pending = false;
        awaitingConnect -= 1;
      }
    };
    const timer = timers.setTimeout(() => {
      if (conn === undefined && !refused) {
        refused = true;
        ws.close(1008, 'connect timeout');
      }
    }, CONNECT_TIMEOUT_MS);

    /** @type {FirstFrame} */
    const firstFrame = {
      connId,
      client,
      accept(c) {
        conn = c;
        settle();
        timers.clearTimeout(timer);
        authenticated.add(ws);
      },
      refuse() {
        refused = true;
      },
    };

    ws.on('message', (data, isBinary) => {
      // Frames that arrive while an (asynchronous) connect decision is pending are dropped.
      if (refused || (connecting && conn === undefined)) return;
      const frame = parseFrame(data, isBinary);
      if (conn !== undefined) return answer(ws, conn, frame);
      connecting = true;
      handshake(ws, req, frame, firstFrame);
    });
    ws.on('close', () => {
      timers.clearTimeout(timer);
      settle();
      authenticated.delete(ws);
      board.changed();
    });
    ws.on('error', (error) => logger.warn({ err: error, connId }, 'websocket error'));
  });

  /**
   * Answers one frame of an authenticated socket.
   * @param {WebSocket} ws
   * @param {Connection} conn
   * @param {unknown} frame
   */
  function answer(ws, conn, frame) {
    if (!isRequest(frame)) {
      const id = isObject(frame) ? frame['id'] : undefined;
      const message = 'expected {"type":"req","id":…,"method":…,"params":…}';
      sendError(ws, id ?? null, invalidRequest(message).shape);
      return;
    }
    const f = /** @type {{ id: string | number, method: string, params?: unknown }} */ (frame);
    if (f.method === 'connect') {
      sendError(ws, f.id, invalidRequest('already connected').shape);
      return;
    }
    const write = isWriteMethod(f.method);
    /** @param {unknown} error */
    const fail = (error) => {
      // A write the quota let through still counts as allowed when its handler fails.
      if (write && !isQuotaRefusal(error)) board.allowed('control-plane');
      if (isPortcullisRpcError(error)) {
        sendError(ws, f.id, error.shape);
      } else {
        logger.error({ err: error, method: f.method, connId: conn.connId }, 'rpc handler failed');
        sendError(ws, f.id, { code: 'INTERNAL', message: 'internal error', retryable: false });
      }
      board.changed();
    };
    /** @param {unknown} payload */
    const ok = (payload) => {
      if (write) board.allowed('control-plane');
      // Creating a session spends the session window; re-opening a known one is free.
      if (f.method === SESSION_METHOD && isObject(payload) && payload['created'] === true)
        board.allowed('session-creation');
      // An asynchronous answer may find the socket already closed.
      if (ws.readyState === ws.OPEN)
        ws.send(JSON.stringify({ type: 'res', id: f.id, ok: true, payload }));
      board.changed();
    };
    try {
      const result = dispatch(f.method, f.params, conn);
      if (isPromise(result)) result.then(ok, fail);
      else ok(result);
    } catch (error) {
      fail(error);
    }
  }

  return {
    wss,
    /** Sends one text frame to every authenticated socket. */
    broadcast: (/** @type {string} */ frame) => {
      for (const ws of authenticated) ws.send(frame);
    },
    /** The connections section of the status snapshot. */
    counts: () => ({ authenticated: authenticated.size, awaitingConnect }),
    /** Drops every socket at once (the gateway is closing). */
    close() {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}

/** The write patterns of the control-plane quota (`worktrees.*` covers `worktrees.add`). */
const WRITE_PATTERNS = controlPlaneWriteMethods.map((p) =>
  p.endsWith('.*') ? { prefix: p.slice(0, -1) } : { exact: p },
);

/** The control-plane quota counts `method` (for the status chart). @param {string} method */
function isWriteMethod(method) {
  return WRITE_PATTERNS.some((p) =>
    'prefix' in p ? method.startsWith(/** @type {string} */ (p.prefix)) : method === p.exact,
  );
}

/** The quota's own refusal (`methodRateLimitedError`: UNAVAILABLE with details.limit). */
function isQuotaRefusal(/** @type {unknown} */ error) {
  if (!isPortcullisRpcError(error)) return false;
  const details = /** @type {{ details?: unknown }} */ (error.shape).details;
  return error.shape.code === 'UNAVAILABLE' && isObject(details) && 'limit' in details;
}
