// The reference gateway: one Node HTTP server with a `ws` WebSocket endpoint, carrying every
// Portcullis limit of DESIGN section 3. Clients authenticate in the first WebSocket frame
// (@portcullis/ws), RPC frames go through the control-plane quotas, the session-creation limit and
// the restart scheduler (@portcullis/rpc), and POST /hooks/<name> is guarded by the webhook gate.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import {
  createAuthGate,
  createClientResolver,
  createFailureLimiter,
  createRestartScheduler,
  createSessionCreationLimiter,
  createWebhookGate,
  isLoopback,
  isPromise,
  presets,
  systemClock,
  systemTimers,
} from '@portcullis/core';
import {
  controlPlaneWriteMethods,
  isPortcullisRpcError,
  PortcullisRpcError,
  withMethodQuotas,
  withRestartRequests,
  withSessionCreationLimit,
} from '@portcullis/rpc';
import { createConnectAuth } from '@portcullis/ws';
import { WebSocketServer } from 'ws';
import {
  configHash,
  loadConfig,
  mergePatch,
  parseConfig,
  redact,
  restoreSecrets,
} from './config.js';
import { createJsonLogger } from './logger.js';
import { createStatusBoard, formatMs } from './status.js';

/** @import { AuthOutcome, Clock, ErrorShape, MaybePromise, MemoryStore, RawRequest, Timers } from '@portcullis/core' */
/** @import { IncomingMessage, ServerResponse } from 'node:http' */
/** @import { WebSocket } from 'ws' */
/** @import { GatewayConfig } from './config.js' */
/** @import { JsonLogger } from './logger.js' */

/** The RPC methods the gateway answers after `connect`. */
export const METHODS = Object.freeze([
  'config.get',
  'config.patch',
  'config.apply',
  'plugins.setEnabled',
  'gateway.restart.request',
  'sessions.create',
]);

/** The method that opens a session (charged by the session-creation limiter unless known). */
export const SESSION_METHOD = 'sessions.create';

/** A socket that has not sent a valid `connect` by then is closed (1008). */
const CONNECT_TIMEOUT_MS = 10_000;
/** Largest WebSocket frame and webhook body accepted. */
const MAX_PAYLOAD = 256 * 1024;
/** Most remembered session ids and issued device tokens (oldest forgotten first). */
const MAX_SESSIONS = 10_000;
const MAX_DEVICES = 1_000;

const STATUS_PAGE = readFileSync(new URL('./status-page.html', import.meta.url), 'utf8');

/**
 * @typedef {object} GatewayOptions
 * @property {unknown} config the configuration (validated here; see `parseConfig`)
 * @property {string} [configPath] the file it came from; a restart re-reads it
 * @property {Clock} [clock] time source of every limiter (default: the system clock)
 * @property {Timers} [timers] timers of every limiter, the restart scheduler and the status
 *   heartbeat (default: the system's, unref'ed)
 * @property {JsonLogger} [logger] structured logger (default: JSON lines on stdout)
 */

/**
 * @typedef {object} Connection
 * @property {string} connId
 * @property {string | undefined} deviceId
 * @property {string | undefined} clientIp
 * @property {string} scope the credential class it authenticated with
 */

/**
 * A string compared in constant time (both sides hashed to the same length first).
 * @param {string} given
 * @param {string | undefined} expected
 * @returns {AuthOutcome}
 */
function compareSecret(given, expected) {
  if (expected === undefined) return 'invalid';
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) ? 'ok' : 'invalid';
}

/** @param {unknown} value */
function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * An `INVALID_REQUEST` error carrying its wire shape.
 * @param {string} message
 * @param {Record<string, unknown>} [details]
 */
function invalidRequest(message, details) {
  return new PortcullisRpcError({
    code: 'INVALID_REQUEST',
    message,
    retryable: false,
    ...(details !== undefined && { details }),
  });
}

/**
 * `fn(value)` now, or when `value` resolves: the memory store answers synchronously.
 * @template T, R
 * @param {MaybePromise<T>} value
 * @param {(v: T) => R} fn
 * @returns {MaybePromise<R>}
 */
function then(value, fn) {
  return isPromise(value) ? value.then(fn) : fn(value);
}

/**
 * A Map that forgets its oldest entry beyond `max`.
 * @template K, V
 * @param {Map<K, V>} map
 * @param {K} key
 * @param {V} value
 * @param {number} max
 */
function remember(map, key, value, max) {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(/** @type {K} */ (map.keys().next().value));
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
 * Creates the gateway. Nothing listens until `listen()`.
 * @param {GatewayOptions} options
 */
export function createGateway(options) {
  const bootConfig = parseConfig(options.config);
  /** @type {GatewayConfig} */
  let config = bootConfig;
  const configPath = options.configPath;
  const clock = options.clock ?? systemClock;
  const timers = options.timers ?? systemTimers;
  const logger = options.logger ?? createJsonLogger();
  const startedAt = clock.now();
  const { trustedProxies } = bootConfig.gateway;
  const rl = bootConfig.gateway.auth.rateLimit;

  // --- the limiters (one of each per process, DESIGN 3.8) ---------------------------------------
  const authLimiter = createFailureLimiter({ ...rl, name: 'auth', clock, timers, logger });
  const browserLimiter = createFailureLimiter({
    ...rl,
    exemptLoopback: false, // DESIGN 3.3: a page in a local browser is never exempt
    name: 'auth-browser',
    clock,
    timers,
    logger,
  });
  const connectAuth = createConnectAuth({
    scope: 'shared-secret',
    limiter: authLimiter,
    browserLimiter,
    trustedProxies,
    logger,
  });
  const webhookLimiter = createFailureLimiter({
    ...presets.webhookAuth,
    name: 'webhook',
    clock,
    timers,
    logger,
  });
  const webhookGate = createWebhookGate({
    verify: (/** @type {IncomingMessage} */ req) => hookOutcome(req),
    limiter: webhookLimiter,
    trustedProxies,
    logger,
  });
  // Off-loopback access to /status needs the shared token, under the same lockout as `connect`.
  const statusGate = createAuthGate({
    verify: (/** @type {IncomingMessage} */ req) => bearerOutcome(req, config.gateway.auth.token),
    scope: 'shared-secret',
    limiter: authLimiter,
    browserLimiter,
    trustedProxies,
    logger,
  });
  const resolveClient = createClientResolver({ trustedProxies, logger });
  const sessionLimiter = createSessionCreationLimiter({ ...presets.sessionCreation, clock });
  const scheduler = createRestartScheduler({
    ...presets.restart,
    clock,
    timers,
    logger,
    onRestart,
  });

  /** @type {Map<string, true>} known session ids */
  const sessions = new Map();
  /** @type {Map<string, string>} device id → device token */
  const deviceTokens = new Map();
  /** @type {Map<string, string>} device token → device id */
  const tokenOwners = new Map();
  /** @type {Set<WebSocket>} */
  const authenticated = new Set();
  let pendingSockets = 0;
  let restarts = 0;
  let connSeq = 0;

  // --- RPC: quotas outside, then restart requests, then session creation, then the handlers -----
  /** The session limiter as `withSessionCreationLimit` sees it: refusals are recorded and carry a wire shape. */
  const chargedSessions = {
    /** @param {string} method */
    consume(method) {
      try {
        sessionLimiter.consume(method);
      } catch (error) {
        const message = /** @type {Error} */ (error).message;
        const d = sessionLimiter.peek();
        board.record({
          event: 'refused',
          limiter: 'session-creation',
          key: method,
          reason: d.reason,
          retryAfterMs: d.retryAfterMs,
          detail: message,
        });
        logger.warn({ code: 'SESSION_RATE_LIMITED', method }, message);
        // DESIGN 3.6: the exact message and no structured retry field.
        throw new PortcullisRpcError({ code: 'UNAVAILABLE', message, retryable: true });
      }
    },
    peek: () => sessionLimiter.peek(),
    reset: () => sessionLimiter.reset(),
  };

  const dispatch = withMethodQuotas(
    withRestartRequests(
      withSessionCreationLimit(handle, {
        methods: [SESSION_METHOD],
        limiter: chargedSessions,
        isKnown: (params) => {
          const id = sessionIdOf(params);
          return id !== undefined && sessions.has(id);
        },
      }),
      { scheduler },
    ),
    {
      ...presets.controlPlaneWrites,
      name: 'control-plane',
      clock,
      timers,
      identity: (/** @type {Connection} */ ctx) => ({
        deviceId: ctx.deviceId,
        clientIp: ctx.clientIp,
        connId: ctx.connId,
      }),
      onLimited: ({ method, key, decision }) =>
        logger.warn(
          { code: 'METHOD_RATE_LIMITED', method, key, retryAfterMs: decision.retryAfterMs },
          `control-plane quota: ${method} refused for ${key}`,
        ),
    },
  );

  const board = createStatusBoard({
    clock,
    timers,
    failureLimiters: [
      {
        name: 'auth',
        title: 'Gateway auth (CLI and server clients, no Origin)',
        rule: `${rl.maxAttempts} failures / ${formatMs(rl.windowMs)} → ${formatMs(rl.lockoutMs)} lockout, per client IP and credential class${rl.exemptLoopback ? '; direct-local loopback exempt' : ''}`,
        store: /** @type {MemoryStore} */ (authLimiter.store),
      },
      {
        name: 'auth-browser',
        title: 'Browser connections (with Origin)',
        rule: `same numbers, never exempt; from loopback one bucket per Origin`,
        store: /** @type {MemoryStore} */ (browserLimiter.store),
      },
      {
        name: 'webhook',
        title: 'Webhook ingress (POST /hooks/*)',
        rule: `${presets.webhookAuth.maxAttempts} failures / ${formatMs(presets.webhookAuth.windowMs)} → ${formatMs(presets.webhookAuth.lockoutMs)} lockout per client IP; loopback not exempt`,
        store: /** @type {MemoryStore} */ (webhookLimiter.store),
      },
    ],
    windowLimiters: [
      {
        name: 'control-plane',
        title: 'Control-plane writes',
        rule: `${presets.controlPlaneWrites.limit} calls / ${formatMs(presets.controlPlaneWrites.windowMs)} per method per device + IP (${controlPlaneWriteMethods.join(', ')})`,
        store: /** @type {MemoryStore} */ (dispatch.limiter.store),
      },
    ],
    extra: () => {
      const s = sessionLimiter.peek();
      const pending = scheduler.pending();
      const last = scheduler.lastRestartAt();
      return {
        gateway: {
          name: config.gateway.name,
          uptimeMs: clock.now() - startedAt,
          configHash: configHash(config),
          connections: { authenticated: authenticated.size, awaitingConnect: pendingSockets },
        },
        sessions: {
          rule: `${presets.sessionCreation.limit} new sessions / ${formatMs(presets.sessionCreation.windowMs)} per gateway; re-opening a known id is free`,
          limit: s.limit,
          used: s.limit - s.remaining,
          resetMs: s.resetMs,
          known: sessions.size,
          maxKnown: MAX_SESSIONS,
        },
        restart: {
          rule: `coalesced; ≥ ${formatMs(presets.restart.cooldownMs)} apart; ${formatMs(presets.restart.defaultDelayMs)} default delay`,
          restarts,
          pending: pending === undefined ? null : pending,
          lastAgoMs: last === undefined ? null : clock.now() - last,
          cooldownLeftMs:
            last === undefined ? 0 : Math.max(0, last + presets.restart.cooldownMs - clock.now()),
        },
      };
    },
  });

  /**
   * The handlers behind the wrappers.
   * @param {string} method
   * @param {unknown} params
   * @param {Connection} _ctx
   */
  function handle(method, params, _ctx) {
    switch (method) {
      case 'config.get':
        return { config: redact(config), hash: configHash(config) };
      case 'config.patch': {
        const patch = objectParam(params, method, 'patch');
        return replaceConfig(mergePatch(structuredClone(config), patch), method);
      }
      case 'config.apply':
        return replaceConfig(structuredClone(objectParam(params, method, 'config')), method);
      case 'plugins.setEnabled': {
        const p = isObject(params) ? /** @type {Record<string, unknown>} */ (params) : {};
        if (typeof p['id'] !== 'string' || typeof p['enabled'] !== 'boolean')
          throw invalidRequest(
            'invalid plugins.setEnabled params: expected { id: string, enabled: boolean }',
          );
        const patch = { plugins: { entries: { [p['id']]: { enabled: p['enabled'] } } } };
        replaceConfig(mergePatch(structuredClone(config), patch), method);
        return { id: p['id'], enabled: p['enabled'] };
      }
      case SESSION_METHOD: {
        const given = sessionIdOf(params);
        const sessionId = given ?? randomUUID();
        const created = !sessions.has(sessionId);
        remember(sessions, sessionId, true, MAX_SESSIONS);
        return { sessionId, created };
      }
      default:
        throw invalidRequest(`unknown method: ${method}`, { methods: METHODS });
    }
  }

  /**
   * @param {unknown} params
   * @param {string} method
   * @param {string} name
   * @returns {Record<string, unknown>}
   */
  function objectParam(params, method, name) {
    const value = isObject(params)
      ? /** @type {Record<string, unknown>} */ (params)[name]
      : undefined;
    if (!isObject(value))
      throw invalidRequest(`invalid ${method} params: ${name} must be an object`);
    return /** @type {Record<string, unknown>} */ (value);
  }

  /**
   * Validates and installs a new running config (in memory; the file is never written).
   * @param {unknown} candidate
   * @param {string} method
   */
  function replaceConfig(candidate, method) {
    let next;
    try {
      next = parseConfig(restoreSecrets(candidate, config));
    } catch (error) {
      const e = /** @type {import('@portcullis/core').PortcullisConfigError} */ (error);
      if (e.name !== 'PortcullisConfigError') throw error;
      throw invalidRequest(`invalid config: ${e.message}`, { code: e.code, option: e.option });
    }
    config = next;
    logger.info({ event: method, configHash: configHash(config) }, `${method}: config replaced`);
    return { config: redact(config), hash: configHash(config) };
  }

  /**
   * @param {unknown} params
   * @returns {string | undefined}
   */
  function sessionIdOf(params) {
    if (params === undefined || params === null) return undefined;
    if (!isObject(params))
      throw invalidRequest(`invalid ${SESSION_METHOD} params: expected an object`);
    const id = /** @type {Record<string, unknown>} */ (params)['sessionId'];
    if (id === undefined) return undefined;
    if (typeof id !== 'string' || !/^[\w.:-]{1,128}$/.test(id))
      throw invalidRequest(
        `invalid ${SESSION_METHOD} params: sessionId must be 1–128 of letters, digits, _ . : -`,
      );
    return id;
  }

  /** The restart scheduler's action: no process is killed, the config file is read again. */
  function onRestart(/** @type {{ reasons: readonly string[] }} */ event) {
    restarts += 1;
    if (configPath === undefined) {
      config = bootConfig;
    } else {
      try {
        config = loadConfig(configPath);
      } catch (error) {
        logger.error(
          { err: error, reasons: event.reasons },
          'restart: config could not be re-read; keeping the config in force',
        );
      }
    }
    logger.info(
      {
        event: 'gateway.restart',
        restarts,
        reasons: event.reasons,
        configHash: configHash(config),
      },
      'gateway restarted (simulated: config re-read, process and limiter state kept)',
    );
    const frame = JSON.stringify({
      type: 'event',
      event: 'gateway.restarted',
      payload: { restarts, reasons: event.reasons, configHash: configHash(config) },
    });
    for (const ws of authenticated) ws.send(frame);
    board.changed();
  }

  // --- credentials ------------------------------------------------------------------------------
  /**
   * Reads the credential class and the outcome from `connect`'s `params.auth`.
   * @param {unknown} auth
   * @returns {{ scope: string, outcome: AuthOutcome, deviceId?: string }}
   */
  function credentialsOf(auth) {
    const a = isObject(auth) ? /** @type {Record<string, unknown>} */ (auth) : {};
    const present = (/** @type {string} */ k) => a[k] !== undefined && a[k] !== '';
    if (present('token')) {
      const t = a['token'];
      return {
        scope: 'shared-secret',
        outcome: typeof t === 'string' ? compareSecret(t, config.gateway.auth.token) : 'invalid',
      };
    }
    if (present('password')) {
      const p = a['password'];
      return {
        scope: 'password',
        outcome: typeof p === 'string' ? compareSecret(p, config.gateway.auth.password) : 'invalid',
      };
    }
    if (present('deviceToken')) {
      const t = a['deviceToken'];
      const owner = typeof t === 'string' ? tokenOwners.get(t) : undefined;
      return owner === undefined
        ? { scope: 'device-token', outcome: 'invalid' }
        : { scope: 'device-token', outcome: 'ok', deviceId: owner };
    }
    return { scope: 'shared-secret', outcome: 'missing' };
  }

  /**
   * @param {IncomingMessage} req
   * @param {string | undefined} expected
   * @returns {AuthOutcome}
   */
  function bearerOutcome(req, expected) {
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer +(\S+)\s*$/i.exec(header) : null;
    if (match === null) return 'missing';
    return compareSecret(/** @type {string} */ (match[1]), expected);
  }

  /** @param {IncomingMessage} req */
  function hookOutcome(req) {
    const alt = req.headers['x-portcullis-token'];
    if (typeof alt === 'string' && alt !== '') return compareSecret(alt, config.hooks.token);
    return bearerOutcome(req, config.hooks.token);
  }

  /**
   * Issues (or rotates) the token a device can `connect` with later (`auth: { deviceToken }`).
   * @param {string} deviceId
   */
  function issueDeviceToken(deviceId) {
    const old = deviceTokens.get(deviceId);
    if (old !== undefined) {
      deviceTokens.delete(deviceId);
      tokenOwners.delete(old);
    } else if (deviceTokens.size >= MAX_DEVICES) {
      const [oldestId, oldestToken] = /** @type {[string, string]} */ (
        deviceTokens.entries().next().value
      );
      deviceTokens.delete(oldestId);
      tokenOwners.delete(oldestToken);
    }
    const token = `dev_${randomBytes(24).toString('base64url')}`;
    deviceTokens.set(deviceId, token);
    tokenOwners.set(token, deviceId);
    return token;
  }

  // --- WebSocket ----------------------------------------------------------------------------------
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD });

  /**
   * @param {WebSocket} ws
   * @param {unknown} id
   * @param {ErrorShape} error
   */
  function sendError(ws, id, error) {
    ws.send(JSON.stringify({ type: 'res', id, ok: false, error }));
  }

  /** @param {unknown} frame */
  function isRequest(frame) {
    if (!isObject(frame)) return false;
    const f = /** @type {Record<string, unknown>} */ (frame);
    const id = f['id'];
    return (
      f['type'] === 'req' &&
      ((typeof id === 'string' && id.length > 0 && id.length <= 128) || Number.isSafeInteger(id)) &&
      typeof f['method'] === 'string'
    );
  }

  /**
   * @param {WebSocket} ws
   * @param {IncomingMessage} req
   */
  function onConnection(ws, req) {
    const connId = `c${++connSeq}`;
    const client = resolveClient(req);
    /** @type {Connection | undefined} */
    let conn;
    let refused = false;
    pendingSockets += 1;
    const timer = timers.setTimeout(() => {
      if (conn === undefined && !refused) {
        refused = true;
        ws.close(1008, 'connect timeout');
      }
    }, CONNECT_TIMEOUT_MS);

    let connecting = false;
    ws.on('message', (data, isBinary) => {
      // Frames that arrive while an (asynchronous) connect decision is pending are dropped.
      if (refused || (connecting && conn === undefined)) return;
      let frame;
      try {
        frame = isBinary ? undefined : JSON.parse(String(data));
      } catch {
        frame = undefined;
      }
      if (conn === undefined) onConnect(frame);
      else onRequest(conn, frame);
    });
    ws.on('close', () => {
      timers.clearTimeout(timer);
      if (conn === undefined) pendingSockets -= 1;
      authenticated.delete(ws);
      board.changed();
    });
    ws.on('error', (error) => logger.warn({ err: error, connId }, 'websocket error'));

    /** @param {unknown} frame */
    function onConnect(frame) {
      const f = /** @type {Record<string, unknown>} */ (isObject(frame) ? frame : {});
      if (!isRequest(frame) || f['method'] !== 'connect') {
        refused = true;
        sendError(
          ws,
          f['id'] ?? null,
          invalidRequest(
            'the first frame must be {"type":"req","id":…,"method":"connect","params":{"auth":…}}',
          ).shape,
        );
        ws.close(1008, 'connect required');
        return;
      }
      const params = isObject(f['params'])
        ? /** @type {Record<string, unknown>} */ (f['params'])
        : {};
      const device = isObject(params['device'])
        ? /** @type {Record<string, unknown>} */ (params['device'])
        : {};
      const askedId = device['id'];
      if (
        askedId !== undefined &&
        (typeof askedId !== 'string' || !/^[\w.:-]{1,128}$/.test(askedId))
      ) {
        refused = true;
        sendError(
          ws,
          f['id'],
          invalidRequest('device.id must be 1–128 of letters, digits, _ . : -').shape,
        );
        ws.close(1008, 'invalid connect params');
        return;
      }
      const creds = credentialsOf(params['auth']);
      connecting = true;
      const attempt = connectAuth.attempt(req, creds.outcome, { scope: creds.scope });
      then(attempt, (result) => {
        if (!result.ok) {
          refused = true;
          if (result.reason === 'rate_limited' && result.decision !== undefined) {
            board.record({
              event: 'refused',
              limiter: client.origin === undefined ? 'auth' : 'auth-browser',
              scope: creds.scope,
              key: result.decision.key,
              reason: result.decision.reason,
              retryAfterMs: result.decision.retryAfterMs,
              detail: 'connect refused: AUTH_RATE_LIMITED, close 1008',
            });
          }
          logger.info(
            {
              event: 'connect.refused',
              connId,
              reason: result.reason,
              scope: creds.scope,
              key: result.decision?.key,
            },
            `connect refused (${result.reason})`,
          );
          connectAuth.refuse(ws, result, (error) => ({
            type: 'res',
            id: f['id'],
            ok: false,
            error,
          }));
          board.changed();
          return;
        }
        const deviceId = creds.deviceId ?? /** @type {string | undefined} */ (askedId);
        conn = { connId, deviceId, clientIp: client.ip, scope: creds.scope };
        pendingSockets -= 1;
        timers.clearTimeout(timer);
        authenticated.add(ws);
        const issued =
          deviceId !== undefined && creds.scope !== 'device-token'
            ? issueDeviceToken(deviceId)
            : undefined;
        ws.send(
          JSON.stringify({
            type: 'res',
            id: f['id'],
            ok: true,
            payload: {
              type: 'hello-ok',
              protocol: 1,
              server: { name: config.gateway.name },
              connId,
              auth: { scope: creds.scope, exempt: result.decision?.reason === 'exempt' },
              ...(deviceId !== undefined && {
                device: { id: deviceId, ...(issued !== undefined && { token: issued }) },
              }),
              methods: METHODS,
            },
          }),
        );
        logger.info(
          { event: 'connect.ok', connId, scope: creds.scope, key: result.decision?.key, deviceId },
          'client connected',
        );
        board.changed();
      });
    }

    /**
     * @param {Connection} c
     * @param {unknown} frame
     */
    function onRequest(c, frame) {
      if (!isRequest(frame)) {
        const id = isObject(frame)
          ? /** @type {Record<string, unknown>} */ (frame)['id']
          : undefined;
        sendError(
          ws,
          id ?? null,
          invalidRequest('expected {"type":"req","id":…,"method":…,"params":…}').shape,
        );
        return;
      }
      const f = /** @type {{ id: string | number, method: string, params?: unknown }} */ (frame);
      if (f.method === 'connect') {
        sendError(ws, f.id, invalidRequest('already connected').shape);
        return;
      }
      /** @param {unknown} error */
      const fail = (error) => {
        if (isPortcullisRpcError(error)) {
          sendError(ws, f.id, error.shape);
        } else {
          logger.error({ err: error, method: f.method, connId: c.connId }, 'rpc handler failed');
          sendError(ws, f.id, { code: 'INTERNAL', message: 'internal error', retryable: false });
        }
        board.changed();
      };
      /** @param {unknown} payload */
      const ok = (payload) => {
        if (ws.readyState === ws.OPEN)
          ws.send(JSON.stringify({ type: 'res', id: f.id, ok: true, payload }));
        board.changed();
      };
      try {
        const result = dispatch(f.method, f.params, c);
        if (isPromise(result)) result.then(ok, fail);
        else ok(result);
      } catch (error) {
        fail(error);
      }
    }
  }

  wss.on('connection', onConnection);

  // --- HTTP ---------------------------------------------------------------------------------------
  /**
   * @param {ServerResponse} res
   * @param {number} status
   * @param {string} body
   * @param {Record<string, string>} [headers]
   */
  function text(res, status, body, headers = {}) {
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
    res.end(body);
  }

  /**
   * @param {ServerResponse} res
   * @param {number} status
   * @param {unknown} body
   */
  function json(res, status, body) {
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
    });
    res.end(JSON.stringify(body));
  }

  /**
   * @param {ServerResponse} res
   * @param {{ status: number, headers: Readonly<Record<string, string>>, body: string }} answer
   */
  function writeAnswer(res, answer) {
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }

  /**
   * Webhook ingress: the gate decides (DESIGN 3.4), then the body is read.
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   * @param {string} name
   */
  function onHook(req, res, name) {
    if (req.method !== 'POST') return text(res, 405, 'Method Not Allowed', { Allow: 'POST' });
    if (!/^[\w.-]{1,64}$/.test(name)) return text(res, 404, 'Not Found');
    if (config.hooks.token === undefined)
      return text(res, 404, 'Not Found (hooks.token is not set)');
    then(webhookGate.run(req, req), (result) => {
      if (!result.ok) {
        req.resume();
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
          logger.info(
            { event: 'hook.unauthorized', hook: name, key: d?.key },
            'webhook: bad token',
          );
        }
        writeAnswer(res, result.answer);
        board.changed();
        return;
      }
      let bytes = 0;
      let tooLarge = false;
      req.on('data', (chunk) => {
        bytes += chunk.length;
        if (bytes > MAX_PAYLOAD && !tooLarge) {
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
    });
  }

  /**
   * /status, /status.json and /status/events: open to direct loopback clients (a loopback peer,
   * no forwarding headers, a loopback Host); anyone else needs `Authorization: Bearer <token>`,
   * checked under the gateway-auth lockout.
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   * @param {string} path
   */
  function onStatus(req, res, path) {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return text(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' });
    const client = resolveClient(req);
    const host = req.headers.host;
    const sameOrigin = client.origin === undefined || client.origin === `http://${host}`;
    const local =
      client.ip !== undefined &&
      isLoopback(client.ip) &&
      !client.proxied &&
      isLoopbackHost(host) &&
      sameOrigin &&
      !Object.keys(req.headers).some(
        (h) => h === 'forwarded' || h === 'x-real-ip' || h.startsWith('x-forwarded-'),
      );
    const serve = () => {
      if (path === '/status.json') return json(res, 200, board.snapshot());
      if (path === '/status/events') return board.stream(res);
      const nonce = randomBytes(16).toString('base64');
      res.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8',
        'Cache-Control': 'no-store',
        'Content-Security-Policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      });
      res.end(STATUS_PAGE.replaceAll('__NONCE__', nonce));
    };
    if (local) return serve();
    then(statusGate.run(req, req), (result) => {
      if (result.ok) serve();
      else writeAnswer(res, result.answer);
    });
  }

  /**
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   */
  function onRequestHttp(req, res) {
    const path = new URL(req.url ?? '/', 'http://gateway').pathname;
    if (path === '/status' || path === '/status.json' || path === '/status/events')
      return onStatus(req, res, path);
    if (path.startsWith('/hooks/')) return onHook(req, res, path.slice('/hooks/'.length));
    if (path === '/healthz') return text(res, 200, 'ok');
    if (path === '/')
      return text(
        res,
        200,
        `Portcullis gateway "${config.gateway.name}": WebSocket on this URL (ws://), POST /hooks/<name>, status at /status\n`,
      );
    return text(res, 404, 'Not Found');
  }

  const server = http.createServer(onRequestHttp);
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

  let closed = false;
  /** @type {{ port: number, host: string, url: string, wsUrl: string } | undefined} */
  let address;

  return {
    server,
    /** The connect-auth instance (its limiters can reset a client by hand). */
    connectAuth,
    scheduler,
    /** The status board (what /status.json serves). */
    status: () => board.snapshot(),
    /** The config in force. */
    config: () => config,
    /** Where it listens, once listening. */
    address: () => address,
    logger,
    /**
     * Starts listening (default: the config's port on 127.0.0.1).
     * @param {{ port?: number, host?: string }} [where]
     */
    async listen(where = {}) {
      const host = where.host ?? '127.0.0.1';
      server.listen(where.port ?? bootConfig.gateway.port, host);
      await once(server, 'listening');
      const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port;
      const base = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      address = { port, host, url: `http://${base}`, wsUrl: `ws://${base}/` };
      return address;
    },
    /** Closes sockets, streams, timers and limiters. */
    async close() {
      if (closed) return;
      closed = true;
      board.close();
      scheduler.close();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      server.closeAllConnections();
      if (server.listening) await new Promise((resolve) => server.close(() => resolve(undefined)));
      await Promise.all([
        authLimiter.close(),
        browserLimiter.close(),
        webhookLimiter.close(),
        dispatch.close(),
      ]);
    },
  };
}

/** @typedef {ReturnType<typeof createGateway>} Gateway */

/**
 * The limits in force, in words (the start banner and the README's table say the same).
 * @param {GatewayConfig} config
 * @returns {Array<[string, string]>}
 */
export function describeLimits(config) {
  const rl = config.gateway.auth.rateLimit;
  const w = presets.webhookAuth;
  return [
    [
      'gateway auth',
      `${rl.maxAttempts} failures / ${formatMs(rl.windowMs)} → ${formatMs(rl.lockoutMs)} lockout, per client IP and credential class (shared-secret, password, device-token)${rl.exemptLoopback ? '; a direct-local CLI is exempt' : ''}`,
    ],
    ['browser origins', 'same numbers, never exempt; from loopback one bucket per Origin'],
    [
      'webhooks',
      `${w.maxAttempts} failures / ${formatMs(w.windowMs)} → ${formatMs(w.lockoutMs)} lockout per client IP (plain 429 + Retry-After)`,
    ],
    [
      'control-plane',
      `${presets.controlPlaneWrites.limit} calls / ${formatMs(presets.controlPlaneWrites.windowMs)} per write method per device + IP (config.patch, config.apply, plugins.setEnabled, gateway.restart.request, …)`,
    ],
    [
      'session creation',
      `${presets.sessionCreation.limit} / ${formatMs(presets.sessionCreation.windowMs)} (${SESSION_METHOD}; re-opening a known sessionId is free)`,
    ],
    [
      'restart',
      `coalesced, ≥ ${formatMs(presets.restart.cooldownMs)} apart, ${formatMs(presets.restart.defaultDelayMs)} default delay (simulated: re-reads the config)`,
    ],
  ];
}
