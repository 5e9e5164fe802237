import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HttpAnswer } from '@portcullis/core/adapter';
import type { UpgradeRefusal, UpgradeServer, WebSocketServerLike } from './guard-upgrade.js';
import { refuseSocket } from './raw-response.js';
import type { Verdict } from './upgrade-verdict.js';

const plain = (status: number, body: string): HttpAnswer => ({
  status,
  headers: { 'Content-Type': 'text/plain; charset=utf-8' },
  body,
});
const BAD_REQUEST = plain(400, 'Bad Request');
const SERVER_ERROR = plain(500, 'Internal Server Error');

/** What answering an upgrade needs: the two servers, the guard's reporter and the hooks. */
export interface UpgradeAnswering<Ws> {
  readonly server: Pick<UpgradeServer, 'listenerCount'>;
  readonly wss: Pick<WebSocketServerLike<Ws>, 'handleUpgrade' | 'emit'>;
  /** Reports the guard's own failure (never a hook's). */
  report(error: unknown, message: string): void;
  /** Runs `onRefused` after the refusal is written; never throws. */
  refused(req: IncomingMessage, refusal: UpgradeRefusal): void;
  /** Runs `onAuthenticated` after `connection` is emitted; never throws. */
  authenticated(ws: Ws, req: IncomingMessage): void;
}

/**
 * Carries out a verdict on the upgrade socket: hands it to another listener, refuses it with a raw
 * HTTP answer, or hands it to `wss` to complete the handshake.
 */
export function answerUpgrade<Ws>(
  to: UpgradeAnswering<Ws>,
  verdict: Verdict,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  release: () => void,
): void {
  if (verdict.kind === 'error')
    to.report(
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
    if (to.server.listenerCount('upgrade') > 1) {
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
    to.refused(req, result);
    return;
  }
  // ws adds its own error handler as the first thing handleUpgrade does.
  release();
  to.wss.handleUpgrade(req, socket, head, (ws) => {
    to.wss.emit('connection', ws, req);
    to.authenticated(ws, req);
  });
}
