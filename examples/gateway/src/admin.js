// What an operator can do about lockouts, once: list them, lift them (unlock) and set them by hand
// (ban). The admin RPC methods (rpc.js) and the unlock button of /status (http.js) both call these,
// so both validate the same way and log the same line. Only the three failure limiters the gateway
// builds are reachable; the browser limiter's per-site and all-origins budgets (core builds those)
// end on their own, and a listing names them nowhere (docs: examples/gateway/README.md#operators).
import { PortcullisConfigError } from '@portcullis/core';
import { invalidRequest, isObject } from './protocol.js';

/** @import { FailureLimiter, LockoutInfo } from '@portcullis/core' */
/** @import { Connection } from './connect.js' */
/** @import { JsonLogger } from './logger.js' */
/** @import { FailureLimiters } from './limits.js' */

/** The admin RPC methods (operator only; each a control-plane write with its own quota bucket). */
export const ADMIN_METHODS = Object.freeze([
  'ratelimit.lockouts',
  'ratelimit.unlock',
  'ratelimit.ban',
]);

/** The credential classes a limiter is keyed by: an unlock or ban without `scope` covers them all. */
const SCOPES = /** @type {const} */ ({
  auth: ['shared-secret', 'password', 'device-token'],
  'auth-browser': ['shared-secret', 'password', 'device-token'],
  webhook: ['default'],
});

/** @typedef {keyof typeof SCOPES} LimiterName */

/** Most lockouts one `ratelimit.lockouts` lists, and the default. */
const MAX_LIST = 1000;
const DEFAULT_LIST = 100;

/** Longest key accepted: `browser-origin:` and an origin of up to 2 KiB (longer ones share a key). */
const MAX_KEY = 2048 + 'browser-origin:'.length;

/**
 * Whether a connection may act on lockouts: it authenticated with the shared secret or the
 * password. A device token proves a paired device, not an operator, and a device locked out for
 * guessing must not be able to lift its own lockout through a sibling device.
 * @param {Connection} conn
 */
export function isOperator(conn) {
  return conn.scope === 'shared-secret' || conn.scope === 'password';
}

/**
 * @param {{ limiters: FailureLimiters, logger: JsonLogger, changed: () => void }} options
 *   `changed` tells the status board to push a fresh snapshot
 */
export function createAdmin(options) {
  const { logger, changed } = options;
  /** @type {Record<LimiterName, FailureLimiter>} */
  const byName = {
    auth: options.limiters.auth,
    'auth-browser': options.limiters.browser,
    webhook: options.limiters.webhook,
  };

  /**
   * The lockouts in force, soonest end first, of one limiter or of all three.
   * @param {unknown} params `{ limiter?, scope?, limit? }`
   */
  async function lockouts(params) {
    const p = paramsOf(params, 'ratelimit.lockouts', ['limiter', 'scope', 'limit']);
    const names = p['limiter'] === undefined ? names3() : [limiterName(p['limiter'])];
    const scope = p['scope'] === undefined ? undefined : scopeOf(p['scope']);
    const limit = p['limit'] === undefined ? DEFAULT_LIST : listLimit(p['limit']);
    /** @type {Array<LockoutInfo & { limiter: LimiterName }>} */
    const all = [];
    for (const name of names) {
      const listed = await byName[name].lockouts({
        limit,
        ...(scope !== undefined && { scope }),
      });
      for (const l of listed) all.push({ limiter: name, ...l });
    }
    all.sort((a, b) => a.until - b.until || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return { lockouts: all.slice(0, limit), truncated: all.length > limit };
  }

  /**
   * Lifts the lockouts of one subject: in `scope`, or in every credential class of the limiter.
   * @param {unknown} params `{ limiter, key, scope? }`
   * @param {Record<string, unknown>} by who asked (logged)
   */
  async function unlock(params, by) {
    const p = paramsOf(params, 'ratelimit.unlock', ['limiter', 'key', 'scope']);
    const name = limiterName(p['limiter']);
    const key = keyOf(p['key']);
    const scopes = p['scope'] === undefined ? SCOPES[name] : [scopeOf(p['scope'])];
    const limiter = byName[name];
    // Never exempt: an operator lifting 127.0.0.1 means the stored lockout, not the exemption.
    const subject = { key, exempt: false };
    /** @type {string[]} */
    const unlocked = [];
    let canonical = key;
    for (const scope of scopes) {
      const before = await limiter.check(subject, scope);
      canonical = (await limiter.reset(subject, scope)).key;
      if (before.reason === 'locked') unlocked.push(scope);
    }
    logger.warn(
      { event: 'ratelimit.unlock', limiter: name, key: canonical, scopes, unlocked, ...by },
      `operator unlocked ${canonical} on ${name} (${unlocked.length > 0 ? unlocked.join(', ') : 'nothing was locked'})`,
    );
    changed();
    return { limiter: name, key: canonical, unlocked };
  }

  /**
   * Locks one subject out by hand for `ms`: in `scope`, or in every credential class.
   * @param {unknown} params `{ limiter, key, ms, scope? }`
   * @param {Record<string, unknown>} by who asked (logged)
   */
  async function ban(params, by) {
    const p = paramsOf(params, 'ratelimit.ban', ['limiter', 'key', 'ms', 'scope']);
    const name = limiterName(p['limiter']);
    const key = keyOf(p['key']);
    const ms = p['ms'];
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > 2_147_483_647)
      throw invalidRequest(
        'invalid ratelimit.ban params: ms must be an integer from 1 to 2147483647',
        {
          option: 'ms',
        },
      );
    const scopes = p['scope'] === undefined ? SCOPES[name] : [scopeOf(p['scope'])];
    const limiter = byName[name];
    /** @type {Array<{ scope: string, retryAfterMs: number }>} */
    const banned = [];
    let canonical = key;
    for (const scope of scopes) {
      const d = await callCore(() => limiter.ban({ key, exempt: false }, { scope, ms }));
      canonical = d.key;
      banned.push({ scope, retryAfterMs: d.retryAfterMs });
    }
    logger.warn(
      { event: 'ratelimit.ban', limiter: name, key: canonical, scopes, ms, ...by },
      `operator banned ${canonical} on ${name} for ${ms} ms (${scopes.join(', ')})`,
    );
    changed();
    return { limiter: name, key: canonical, banned };
  }

  return { lockouts, unlock, ban };
}

/** @typedef {ReturnType<typeof createAdmin>} Admin */

/** @returns {LimiterName[]} */
function names3() {
  return ['auth', 'auth-browser', 'webhook'];
}

/**
 * `params` as an object holding only `allowed` keys (a misspelt one is an error, not ignored).
 * @param {unknown} params
 * @param {string} method
 * @param {string[]} allowed
 */
function paramsOf(params, method, allowed) {
  if (params === undefined || params === null) return {};
  if (!isObject(params)) throw invalidRequest(`invalid ${method} params: expected an object`);
  // Named in the answer, but only the first few, each cut short: a frame may carry thousands.
  const unknown = Object.keys(params).filter((k) => !allowed.includes(k));
  if (unknown.length > 0)
    throw invalidRequest(
      `invalid ${method} params: unknown ${unknown.length > 1 ? 'fields' : 'field'} ${unknown
        .slice(0, 3)
        .map((k) => JSON.stringify(k.slice(0, 64)))
        .join(
          ', ',
        )}${unknown.length > 3 ? ` and ${unknown.length - 3} more` : ''} (expected ${allowed.join(', ')})`,
    );
  return params;
}

/**
 * @param {unknown} value
 * @returns {LimiterName}
 */
function limiterName(value) {
  if (value === 'auth' || value === 'auth-browser' || value === 'webhook') return value;
  throw invalidRequest('invalid params: limiter must be one of auth, auth-browser, webhook', {
    option: 'limiter',
    limiters: names3(),
  });
}

/** @param {unknown} value */
function scopeOf(value) {
  if (typeof value === 'string' && /^[\w.-]{1,64}$/.test(value)) return value;
  throw invalidRequest('invalid params: scope must be 1–64 of letters, digits, _ . -', {
    option: 'scope',
  });
}

/**
 * A key as the status page and `ratelimit.lockouts` list it (an IP is canonicalised by the
 * limiter: `::ffff:1.2.3.4` and `1.2.3.4` are one subject, an IPv6 address its /64).
 * @param {unknown} value
 */
function keyOf(value) {
  // Control characters never appear in a key the gateway makes; refusing them keeps logs clean.
  if (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_KEY &&
    !/[\p{Cc}]/u.test(value)
  )
    return value;
  throw invalidRequest(
    `invalid params: key must be a non-empty string of at most ${MAX_KEY} characters without control characters`,
    {
      option: 'key',
    },
  );
}

/** @param {unknown} value */
function listLimit(value) {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_LIST)
    return value;
  throw invalidRequest(`invalid params: limit must be an integer from 1 to ${MAX_LIST}`, {
    option: 'limit',
  });
}

/**
 * Runs a core call whose option errors become `INVALID_REQUEST`s.
 * @template T
 * @param {() => T | Promise<T>} call
 */
async function callCore(call) {
  try {
    return await call();
  } catch (error) {
    if (error instanceof PortcullisConfigError)
      throw invalidRequest(`invalid params: ${error.message}`, { code: error.code });
    throw error;
  }
}
