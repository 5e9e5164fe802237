// The HTTP side: one node:http server whose routes are /status (with /status.json,
// /status/events and the unlock button's POST /status/unlock), GET /metrics (metrics.js),
// POST /hooks/<name> (hooks.js), /healthz and /, and
// whose upgrades on / or /ws go to the WebSocket server (sockets.js). The status endpoints show
// client IPs and origins, so only a direct loopback client reads them (and /metrics) freely; anyone
// else needs the shared token, checked under the same lockout as `connect`. The server counts the
// requests in flight, which a due restart waits for (restart.js). Also the small response writers
// every route uses.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { isLoopback } from '@portcullis/core';
import { createAuthGate } from '@portcullis/core/adapter';
import { SCOPE_BUDGET } from './limits.js';
import { PROMETHEUS_CONTENT_TYPE } from './metrics.js';
import { bearerOutcome } from './secrets.js';
import { esc, metaText, renderMain } from './status-view.js';

/** @import { FailureLimiter } from '@portcullis/core' */
/** @import { ClientResolver, HttpAnswer } from '@portcullis/core/adapter' */
/** @import { Admin } from './admin.js' */
/** @import { IncomingMessage, ServerResponse } from 'node:http' */
/** @import { WebSocketServer } from 'ws' */
/** @import { RunningConfig } from './config.js' */
/** @import { JsonLogger } from './logger.js' */
/** @import { Metrics } from './metrics.js' */
/** @import { StatusBoard } from './status.js' */
/** @import { Snapshot } from './status-view.js' */

/**
 * The page template with the drawing code of status-view.js inlined into its script (the file minus
 * its `export` line), so the browser redraws with the very functions that drew the first paint.
 */
const STATUS_PAGE = (() => {
  const view = readFileSync(new URL('./status-view.js', import.meta.url), 'utf8').replace(
    /^export \{[^}]*\};\s*$/m,
    '',
  );
  const page = readFileSync(new URL('./status-page.html', import.meta.url), 'utf8');
  return page.replace('/*VIEW*/', () => view);
})();

/**
 * The status page with the snapshot drawn in (server-side), under this response's nonce, carrying
 * the token its unlock buttons post.
 * @param {Snapshot} snapshot
 * @param {string} nonce
 * @param {string} unlockToken
 */
export function statusPage(snapshot, nonce, unlockToken) {
  const fill = /** @type {Record<string, string>} */ ({
    __NONCE__: nonce,
    __NAME__: esc(`“${snapshot.gateway.name}”`),
    __META__: esc(metaText(snapshot)),
    __NOW__: String(snapshot.now),
    __TOKEN__: esc(unlockToken),
    '<!--MAIN-->': renderMain(snapshot, unlockToken),
  });
  return STATUS_PAGE.replace(
    /__NONCE__|__NAME__|__META__|__NOW__|__TOKEN__|<!--MAIN-->/g,
    (k) => fill[k] ?? k,
  );
}

/** Largest unlock form accepted (a key is at most about 2 KiB; the rest is small). */
const MAX_UNLOCK_BODY = 8 * 1024;

/** The page's inline script and style run only under this response's nonce. */
const STATUS_PAGE_CSP = (/** @type {string} */ nonce) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`;

/**
 * @param {ServerResponse} res
 * @param {number} status
 * @param {string} body
 * @param {Record<string, string>} [headers]
 */
export function text(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  res.end(body);
}

/**
 * @param {ServerResponse} res
 * @param {number} status
 * @param {unknown} body
 */
export function json(res, status, body) {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
  });
  res.end(JSON.stringify(body));
}

/**
 * Writes a gate's answer as is: core already chose its status, headers and body.
 * @param {ServerResponse} res
 * @param {HttpAnswer} answer
 */
export function writeAnswer(res, answer) {
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

/**
 * The request body as text, or `undefined` when it is longer than `max` bytes (then the rest is
 * not read and the connection closes after the answer).
 * @param {IncomingMessage} req
 * @param {number} max
 * @returns {Promise<string | undefined>}
 */
function readBody(req, max) {
  return new Promise((resolve, reject) => {
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    req.on('data', (/** @type {Buffer} */ chunk) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

/**
 * The `Host` header names this machine's loopback interface (DNS-rebinding guard for /status).
 * @param {string | undefined} host
 */
function isLoopbackHost(host) {
  if (host === undefined) return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.split(':')[0];
  return name === 'localhost' || name?.endsWith('.localhost') || isLoopback(name ?? '');
}

/**
 * @param {{
 *   config: RunningConfig,
 *   board: StatusBoard,
 *   metrics: Metrics,
 *   onHook: (req: IncomingMessage, res: ServerResponse, name: string) => void,
 *   wss: WebSocketServer,
 *   admin: Admin,
 *   resolveClient: ClientResolver,
 *   limiter: FailureLimiter,
 *   browserLimiter: FailureLimiter,
 *   trustedProxies: readonly string[],
 *   logger: JsonLogger,
 * }} options `limiter` and `browserLimiter` are connect's, for the status bearer check
 * @returns {{ server: import('node:http').Server, inFlight: () => number }} the server, and how
 *   many of its requests are in flight (the live /status/events streams left out: they never end)
 */
export function createHttpServer(options) {
  const { config, board, metrics, onHook, wss, admin, resolveClient, trustedProxies, logger } =
    options;
  let inFlight = 0;
  // What the status page carries for its unlock buttons: a page of another site cannot read it
  // (no CORS), so its forged POST lacks it. One per process: any page this process served works.
  const unlockToken = randomBytes(32).toString('base64url');
  const unlockDigest = createHash('sha256').update(unlockToken).digest();
  const statusGate = createAuthGate({
    verify: (/** @type {IncomingMessage} */ req) =>
      bearerOutcome(req, config.current().gateway.auth.token),
    scope: 'shared-secret',
    limiter: options.limiter,
    browserLimiter: options.browserLimiter,
    // The bearer is the shared secret: its guesses spend the same scope budget as connect's (the
    // layers live beside the shared limiter's store), and a client connect trusts is trusted here.
    scopeBudget: SCOPE_BUDGET,
    trustedProxies,
    logger,
  });

  /**
   * A direct loopback client: a loopback peer that sent no forwarding headers, a `Host` naming
   * the loopback interface and no `Origin` other than the gateway's own.
   * @param {IncomingMessage} req
   */
  function isDirectLoopback(req) {
    const client = resolveClient(req);
    const host = req.headers.host;
    // The Origin header itself: resolveClient reports a browser's request without one as the
    // opaque origin 'null' (a browser is never a direct-local CLI to the limiters), but the
    // operator's own browser opening /status on this machine is who the page is for.
    const origin = req.headers.origin;
    // A browser says where the request comes from: typed or bookmarked (none) or the page itself
    // (same-origin) may read it; another site's page (an <img>, a form) may not.
    const site = req.headers['sec-fetch-site'];
    const sameOrigin =
      (origin === undefined || origin === `http://${host}`) &&
      (site === undefined || site === 'none' || site === 'same-origin');
    return (
      client.ip !== undefined &&
      isLoopback(client.ip) &&
      !client.proxied &&
      isLoopbackHost(host) &&
      sameOrigin &&
      !Object.keys(req.headers).some(
        (h) => h === 'forwarded' || h === 'x-real-ip' || h.startsWith('x-forwarded-'),
      )
    );
  }

  /**
   * /status, /status.json and /status/events, for a direct loopback client or the shared token.
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   * @param {string} path
   */
  async function onStatus(req, res, path) {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return text(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' });
    if (!isDirectLoopback(req)) {
      const result = await statusGate.run(req, req);
      if (!result.ok) return writeAnswer(res, result.answer);
    }
    if (path === '/status.json') return json(res, 200, board.snapshot());
    if (path === '/status/events') return board.stream(res);
    const nonce = randomBytes(16).toString('base64');
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': STATUS_PAGE_CSP(nonce),
      'X-Content-Type-Options': 'nosniff',
      // Not `no-referrer`: under it Chromium sends `Origin: null` with the unlock form's POST,
      // which the cross-site check must refuse; `same-origin` still tells other sites nothing.
      'Referrer-Policy': 'same-origin',
    });
    // The board's snapshot carries the gateway's own sections too (gateway.js `extra`).
    res.end(
      statusPage(
        /** @type {Snapshot} */ (/** @type {unknown} */ (board.snapshot())),
        nonce,
        unlockToken,
      ),
    );
  }

  /**
   * Another site's page sent it: its Origin is not the gateway's own, or the browser says so.
   * @param {IncomingMessage} req
   */
  function isCrossSite(req) {
    const origin = req.headers.origin;
    const site = req.headers['sec-fetch-site'];
    return (
      (origin !== undefined && origin !== `http://${req.headers.host}`) ||
      (site !== undefined && site !== 'same-origin')
    );
  }

  /**
   * POST /status/unlock, the status page's unlock button: who may read /status, from the page
   * itself (same origin, the page's token), lifts one lockout. JSON for the page's script, a 303
   * back to /status for a plain form post.
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   */
  async function onUnlock(req, res) {
    if (req.method !== 'POST') return text(res, 405, 'Method Not Allowed', { Allow: 'POST' });
    if (isCrossSite(req)) return text(res, 403, 'Forbidden: a cross-site request cannot unlock');
    if (!isDirectLoopback(req)) {
      const result = await statusGate.run(req, req);
      if (!result.ok) return writeAnswer(res, result.answer);
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded')
      return text(res, 415, 'Unsupported Media Type: send application/x-www-form-urlencoded');
    const body = await readBody(req, MAX_UNLOCK_BODY);
    if (body === undefined) return text(res, 413, 'Payload Too Large', { Connection: 'close' });
    const form = new URLSearchParams(body);
    const token = form.get('token');
    if (
      token === null ||
      !timingSafeEqual(createHash('sha256').update(token).digest(), unlockDigest)
    )
      return text(res, 403, 'Forbidden: missing or wrong unlock token (reload /status)');
    const client = resolveClient(req);
    let result;
    try {
      result = await admin.unlock(
        {
          limiter: form.get('limiter') ?? undefined,
          ...(form.get('key') !== null && { key: form.get('key') }),
          ...(form.get('account') !== null && { account: form.get('account') }),
          ...(form.get('scope') !== null && { scope: form.get('scope') }),
        },
        { via: 'status', clientIp: client.ip },
      );
    } catch (error) {
      const e = /** @type {{ shape?: { message: string } }} */ (error);
      if (e.shape === undefined) throw error;
      return text(res, 400, `Bad Request: ${e.shape.message}`);
    }
    if ((req.headers.accept ?? '').includes('application/json')) return json(res, 200, result);
    res.writeHead(303, { Location: '/status', 'Cache-Control': 'no-store' });
    res.end();
  }

  /**
   * GET /metrics, for a direct loopback client or the shared token (like /status).
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   */
  async function onMetrics(req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return text(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' });
    if (!isDirectLoopback(req)) {
      const result = await statusGate.run(req, req);
      if (!result.ok) return writeAnswer(res, result.answer);
    }
    const body = await metrics.scrape();
    res.writeHead(200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE, 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  const server = createServer(function route(req, res) {
    const path = new URL(req.url ?? '/', 'http://gateway').pathname;
    if (path !== '/status/events') {
      inFlight++;
      res.once('close', () => inFlight--);
    }
    if (path === '/status' || path === '/status.json' || path === '/status/events')
      return void onStatus(req, res, path);
    if (path === '/status/unlock')
      return void onUnlock(req, res).catch((error) => {
        logger.error({ err: error }, 'unlock failed');
        if (!res.headersSent) text(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    if (path === '/metrics')
      return void onMetrics(req, res).catch((error) => {
        logger.error({ err: error }, 'metrics scrape failed');
        if (!res.headersSent) text(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    if (path.startsWith('/hooks/')) return onHook(req, res, path.slice('/hooks/'.length));
    if (path === '/healthz') return text(res, 200, 'ok');
    if (path === '/')
      return text(
        res,
        200,
        `Portcullis gateway "${config.current().gateway.name}": WebSocket on this URL (ws://), POST /hooks/<name>, status at /status\n`,
      );
    return text(res, 404, 'Not Found');
  });
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    const path = new URL(req.url ?? '/', 'http://gateway').pathname;
    if (path !== '/' && path !== '/ws') {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });
  return { server, inFlight: () => inFlight };
}
