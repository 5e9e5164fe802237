// POST /hooks/<name>: webhook ingress guarded by core's webhook gate (docs/design.md#webhooks). The gateway has
// no framework, so it calls createWebhookGate directly and writes the gate's answer as the
// adapters' webhookGuard do. The gate decides before the body is read: a wrong token costs the
// sender one failure and us no upload; a right one passes (even during a lockout) and resets the
// count. The token comes from `Authorization: Bearer …` or `x-portcullis-token`.
import { createWebhookGate, isPromise } from '@portcullis/core/adapter';
import { json, text, writeAnswer } from './http.js';
import { bearerOutcome, compareSecret } from './secrets.js';

/** @import { FailureLimiter } from '@portcullis/core' */
/** @import { GateResult } from '@portcullis/core/adapter' */
/** @import { IncomingMessage, ServerResponse } from 'node:http' */
/** @import { RunningConfig } from './config.js' */
/** @import { JsonLogger } from './logger.js' */
/** @import { StatusBoard } from './status.js' */

/** Largest webhook body accepted. */
const MAX_BODY_BYTES = 256 * 1024;

/**
 * @param {{
 *   config: RunningConfig,
 *   limiter: FailureLimiter,
 *   trustedProxies: readonly string[],
 *   logger: JsonLogger,
 *   board: Pick<StatusBoard, 'record' | 'changed' | 'allowed'>,
 * }} options
 * @returns {(req: IncomingMessage, res: ServerResponse, name: string) => void} the route handler;
 *   `name` is the path after `/hooks/`
 */
export function createHookRoute(options) {
  const { config, limiter, trustedProxies, logger, board } = options;
  const gate = createWebhookGate({
    verify: (/** @type {IncomingMessage} */ req) => {
      const { token } = config.current().hooks;
      const alt = req.headers['x-portcullis-token'];
      if (typeof alt === 'string' && alt !== '') return compareSecret(alt, token);
      return bearerOutcome(req, token);
    },
    limiter,
    trustedProxies,
    logger,
  });

  return function onHook(req, res, name) {
    if (req.method !== 'POST') return text(res, 405, 'Method Not Allowed', { Allow: 'POST' });
    if (!/^[\w.-]{1,64}$/.test(name)) return text(res, 404, 'Not Found');
    if (config.current().hooks.token === undefined)
      return text(res, 404, 'Not Found (hooks.token is not set)');
    const gated = gate.run(req, req);
    if (isPromise(gated))
      gated.then(decided).catch((error) => {
        // The gate answers a store failure itself; this is a throw on our side of the answer.
        logger.error({ err: error }, 'webhook: answering the request failed');
        if (!res.headersSent) text(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    else decided(gated);

    /** @param {GateResult} result */
    function decided(result) {
      if (result.ok || result.answer.status !== 429) board.allowed('webhook');
      if (result.ok) return receive();
      req.resume(); // the body is never read: drain it so the connection can be reused
      const d = result.decision;
      if (result.answer.status === 429 && d !== undefined) {
        board.record({
          event: 'refused',
          limiter: 'webhook',
          scope: 'default',
          key: d.key,
          reason: d.reason,
          retryAfterMs: d.retryAfterMs,
          detail: `POST /hooks/${name} → 429`,
        });
        logger.warn(
          { code: 'WEBHOOK_RATE_LIMITED', hook: name, key: d.key, retryAfterMs: d.retryAfterMs },
          'webhook refused: too many failed tokens',
        );
      } else {
        logger.info({ event: 'hook.unauthorized', hook: name, key: d?.key }, 'webhook: bad token');
      }
      writeAnswer(res, result.answer);
      board.changed();
    }

    /** Reads (and only counts) the body of an accepted webhook, then answers 202. */
    function receive() {
      let bytes = 0;
      let tooLarge = false;
      req.on('data', (chunk) => {
        bytes += chunk.length;
        if (bytes > MAX_BODY_BYTES && !tooLarge) {
          tooLarge = true;
          text(res, 413, 'Payload Too Large', { Connection: 'close' });
          req.destroy();
        }
      });
      req.on('end', () => {
        if (tooLarge) return;
        logger.info({ event: 'hook.received', hook: name, bytes }, 'webhook received');
        json(res, 202, { ok: true, hook: name, bytes });
        board.changed();
      });
    }
  };
}
