// The RPC methods a connected client may call, and the limits wrapped around them. The handlers
// sit innermost; around them, from the inside out: the session-creation limit (only new session
// ids are charged), restart requests routed to core's scheduler, and the per-method control-plane
// quotas — so a refused write costs no handler work and every restart request spends a quota slot
// (docs/design.md#control-plane-quotas, #session-creation, #restart-cooldown) — and outermost the
// operator check of the admin methods (admin.js), so only an operator's calls spend their quota.
// Config changes stay in memory; the file is never written.
import { randomUUID } from 'node:crypto';
import { createSessionCreationLimiter, presets } from '@portcullis/core';
import {
  controlPlaneWriteMethods,
  PortcullisRpcError,
  withMethodQuotas,
  withRestartRequests,
  withSessionCreationLimit,
} from '@portcullis/rpc';
import { ADMIN_METHODS, isOperator } from './admin.js';
import { configHash, mergePatch, parseConfig, redact, restoreSecrets } from './config.js';
import { invalidRequest, isObject } from './protocol.js';
import { formatMs } from './status.js';

/** @import { Clock, MemoryStore, PortcullisConfigError, RestartScheduler, Timers } from '@portcullis/core' */
/** @import { Admin } from './admin.js' */
/** @import { RunningConfig } from './config.js' */
/** @import { Connection } from './connect.js' */
/** @import { JsonLogger } from './logger.js' */
/** @import { RefusedEntry } from './status.js' */

/** The RPC methods the gateway answers after `connect`. */
export const METHODS = Object.freeze([
  'config.get',
  'config.patch',
  'config.apply',
  'plugins.setEnabled',
  'gateway.restart.request',
  'sessions.create',
  ...ADMIN_METHODS,
]);

/** The method that opens a session (charged by the session-creation limiter unless known). */
export const SESSION_METHOD = 'sessions.create';

/** Most remembered session ids (the oldest forgotten first). */
const MAX_SESSIONS = 10_000;

/**
 * @param {{
 *   config: RunningConfig,
 *   scheduler: RestartScheduler,
 *   clock: Clock,
 *   timers: Timers,
 *   logger: JsonLogger,
 *   recordRefusal: (entry: Omit<RefusedEntry, 'seq' | 'at'>) => void,
 *   admin: Admin,
 * }} options `recordRefusal` puts a refused session on the status board; `admin` answers the
 *   `ratelimit.*` methods
 */
export function createRpc(options) {
  const { config, scheduler, clock, timers, logger, recordRefusal, admin } = options;
  const sessionLimiter = createSessionCreationLimiter({ ...presets.sessionCreation, clock });
  /** @type {Map<string, true>} known session ids, oldest first */
  const sessions = new Map();

  /** The session limiter as `withSessionCreationLimit` sees it: refusals are recorded and carry a wire shape. */
  const chargedSessions = {
    /** @param {string} method */
    consume(method) {
      try {
        sessionLimiter.consume(method);
      } catch (error) {
        const message = /** @type {Error} */ (error).message;
        const d = sessionLimiter.peek();
        recordRefusal({
          event: 'refused',
          limiter: 'session-creation',
          key: method,
          reason: d.reason,
          retryAfterMs: d.retryAfterMs,
          detail: message,
        });
        logger.warn({ code: 'SESSION_RATE_LIMITED', method }, message);
        // docs/design.md#session-creation: the exact message and no structured retry field.
        throw new PortcullisRpcError({ code: 'UNAVAILABLE', message, retryable: true });
      }
    },
    peek: () => sessionLimiter.peek(),
    reset: () => sessionLimiter.reset(),
  };

  const quotaed = withMethodQuotas(
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
      // The admin methods are control-plane writes too, each with its own bucket.
      methods: [...controlPlaneWriteMethods, 'ratelimit.*'],
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

  /**
   * Refuses the admin methods to a connection that is not an operator, before its quota is spent.
   * @param {string} method
   * @param {unknown} params
   * @param {Connection} ctx
   */
  function dispatch(method, params, ctx) {
    if (typeof method === 'string' && method.startsWith('ratelimit.') && !isOperator(ctx))
      return Promise.reject(
        invalidRequest(
          `${method} needs an operator: connect with the shared secret or the password (a device token is not enough)`,
          { code: 'OPERATOR_REQUIRED', method },
        ),
      );
    return quotaed(method, params, ctx);
  }

  /**
   * The handlers behind the wrappers.
   * @param {string} method
   * @param {unknown} params
   * @param {Connection} ctx
   */
  function handle(method, params, ctx) {
    switch (method) {
      case 'ratelimit.lockouts':
        return admin.lockouts(params);
      case 'ratelimit.unlock':
        return admin.unlock(params, operatorOf(ctx));
      case 'ratelimit.ban':
        return admin.ban(params, operatorOf(ctx));
      case 'ratelimit.access':
        return admin.access(params);
      case 'ratelimit.allow':
        return admin.allow(params, operatorOf(ctx));
      case 'ratelimit.deny':
        return admin.deny(params, operatorOf(ctx));
      case 'ratelimit.unlist':
        return admin.unlist(params, operatorOf(ctx));
      case 'config.get':
        return { config: redact(config.current()), hash: configHash(config.current()) };
      case 'config.patch': {
        const patch = objectParam(params, method, 'patch');
        return replaceConfig(mergePatch(structuredClone(config.current()), patch), method);
      }
      case 'config.apply':
        return replaceConfig(structuredClone(objectParam(params, method, 'config')), method);
      case 'plugins.setEnabled': {
        const p = isObject(params) ? params : {};
        if (typeof p['id'] !== 'string' || typeof p['enabled'] !== 'boolean')
          throw invalidRequest(
            'invalid plugins.setEnabled params: expected { id: string, enabled: boolean }',
          );
        const patch = { plugins: { entries: { [p['id']]: { enabled: p['enabled'] } } } };
        replaceConfig(mergePatch(structuredClone(config.current()), patch), method);
        return { id: p['id'], enabled: p['enabled'] };
      }
      case SESSION_METHOD: {
        const sessionId = sessionIdOf(params) ?? randomUUID();
        const created = !sessions.has(sessionId);
        // Re-inserted so the ids forgotten first are the ones least recently opened.
        sessions.delete(sessionId);
        sessions.set(sessionId, true);
        if (sessions.size > MAX_SESSIONS)
          sessions.delete(/** @type {string} */ (sessions.keys().next().value));
        return { sessionId, created };
      }
      default:
        throw invalidRequest(`unknown method: ${method}`, { methods: METHODS });
    }
  }

  /**
   * Validates and installs a new running config.
   * @param {unknown} candidate
   * @param {string} method
   */
  function replaceConfig(candidate, method) {
    let next;
    try {
      next = parseConfig(restoreSecrets(candidate, config.current()));
    } catch (error) {
      const e = /** @type {PortcullisConfigError} */ (error);
      if (e.name !== 'PortcullisConfigError') throw error;
      throw invalidRequest(`invalid config: ${e.message}`, { code: e.code, option: e.option });
    }
    config.replace(next);
    const hash = configHash(next);
    logger.info({ event: method, configHash: hash }, `${method}: config replaced`);
    return { config: redact(next), hash };
  }

  return {
    /** Dispatches one request: `dispatch(method, params, connection)`. */
    dispatch,
    /** The control-plane quota's store (the status board lists its blocked buckets). */
    quotaStore: /** @type {MemoryStore} */ (quotaed.limiter.store),
    /** The sessions section of the status snapshot. */
    sessionStatus() {
      const s = sessionLimiter.peek();
      return {
        rule: `${presets.sessionCreation.limit} new sessions / ${formatMs(presets.sessionCreation.windowMs)} per gateway; re-opening a known id is free`,
        limit: s.limit,
        used: s.limit - s.remaining,
        resetMs: s.resetMs,
        known: sessions.size,
        maxKnown: MAX_SESSIONS,
      };
    },
    /** Stops the quota store's sweep. */
    close: () => quotaed.close(),
  };
}

/**
 * Who called an admin method, for its log line.
 * @param {Connection} ctx
 */
function operatorOf(ctx) {
  return { via: 'rpc', connId: ctx.connId, deviceId: ctx.deviceId, clientIp: ctx.clientIp };
}

/**
 * The object param `name` of `method`, or an `INVALID_REQUEST`.
 * @param {unknown} params
 * @param {string} method
 * @param {string} name
 * @returns {Record<string, unknown>}
 */
function objectParam(params, method, name) {
  const value = isObject(params) ? params[name] : undefined;
  if (!isObject(value)) throw invalidRequest(`invalid ${method} params: ${name} must be an object`);
  return value;
}

/**
 * The `sessionId` asked for, if any; a malformed one is an `INVALID_REQUEST`.
 * @param {unknown} params
 * @returns {string | undefined}
 */
function sessionIdOf(params) {
  if (params === undefined || params === null) return undefined;
  if (!isObject(params))
    throw invalidRequest(`invalid ${SESSION_METHOD} params: expected an object`);
  const id = params['sessionId'];
  if (id === undefined) return undefined;
  if (typeof id !== 'string' || !/^[\w.:-]{1,128}$/.test(id))
    throw invalidRequest(
      `invalid ${SESSION_METHOD} params: sessionId must be 1–128 of letters, digits, _ . : -`,
    );
  return id;
}
