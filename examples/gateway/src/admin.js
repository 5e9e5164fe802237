// What an operator can do about lockouts, once: list them, lift them (unlock) and set them by hand
// (ban), and the access list's allow and deny rules. The admin RPC methods (rpc.js) and the unlock
// button of /status (http.js) both call these, so both validate the same way and log the same line.
// Reachable: the three failure limiters the gateway builds and the auth layers' limiters (pair,
// account, spray, scope); the browser limiter's per-site and all-origins budgets (core builds
// those) end on their own, and a listing names them nowhere (examples/gateway/README.md#operators).
import { ipKey, PortcullisConfigError } from '@portcullis/core';
import { invalidRequest, isObject } from './protocol.js';

/** @import { AccessList, AccessRule, FailureLimiter, LockoutInfo } from '@portcullis/core' */
/** @import { Connection } from './connect.js' */
/** @import { JsonLogger } from './logger.js' */
/** @import { FailureLimiters } from './limits.js' */

/** The admin RPC methods (operator only; each a control-plane write with its own quota bucket). */
export const ADMIN_METHODS = Object.freeze([
  'ratelimit.lockouts',
  'ratelimit.unlock',
  'ratelimit.ban',
  'ratelimit.access',
  'ratelimit.allow',
  'ratelimit.deny',
  'ratelimit.unlist',
]);

/** The credential classes a limiter is keyed by: an unlock or ban without `scope` covers them all. */
const SCOPES = /** @type {const} */ ({
  auth: ['shared-secret', 'password', 'device-token'],
  'auth-browser': ['shared-secret', 'password', 'device-token'],
  webhook: ['default'],
});

/** @typedef {keyof typeof SCOPES} LimiterName */

/** The auth layers an operator can lift, and what names each one's lockout (docs/design.md#defence-in-depth). */
const LAYERS = /** @type {const} */ ({
  'auth.pair': { key: true, account: true },
  'auth.account': { key: false, account: true },
  'auth.spray': { key: true, account: false },
  'auth.scope': { key: false, account: false },
});

/** @typedef {keyof typeof LAYERS} LayerName */

/** Longest account name (the auth layers key longer ones as `account:invalid`). */
const MAX_ACCOUNT = 256;

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
 * @param {{
 *   limiters: FailureLimiters,
 *   layers?: () => readonly FailureLimiter[],
 *   access?: AccessList,
 *   logger: JsonLogger,
 *   changed: () => void,
 * }} options `layers` the auth layers' limiters (read at each call: they are built later);
 *   `access` the gateway's access list; `changed` tells the status board to push a fresh snapshot
 */
export function createAdmin(options) {
  const { logger, changed, access } = options;
  const layers = options.layers ?? (() => []);
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
    const names =
      p['limiter'] === undefined
        ? [...names3(), ...layerNames()]
        : [anyLimiterName(p['limiter'], layerNames())];
    const scope = p['scope'] === undefined ? undefined : scopeOf(p['scope']);
    const limit = p['limit'] === undefined ? DEFAULT_LIST : listLimit(p['limit']);
    /** @type {Array<Omit<LockoutInfo, 'key'> & { limiter: string, key: string, account?: string }>} */
    const all = [];
    for (const name of names) {
      const limiter = limiterOf(name);
      if (limiter === undefined) continue;
      const listed = await limiter.lockouts({
        limit,
        ...(scope !== undefined && { scope }),
      });
      for (const l of listed) all.push({ limiter: name, ...l, ...layerKey(l.key) });
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
    const p = paramsOf(params, 'ratelimit.unlock', ['limiter', 'key', 'account', 'scope']);
    const layerName = layerNames().find((n) => n === p['limiter']);
    if (layerName !== undefined) return unlockLayer(layerName, p, by);
    if (p['account'] !== undefined)
      throw invalidRequest(
        "invalid ratelimit.unlock params: account names an auth layer's lockout (limiter auth.pair or auth.account)",
        {
          option: 'account',
        },
      );
    const name = limiterName(p['limiter'], layerNames());
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

  /** The layers' limiters by name, as the gate named them (`auth.pair`, …). */
  function layerNames() {
    const present = new Set(layers().map((l) => l.config.name));
    return /** @type {LayerName[]} */ (Object.keys(LAYERS).filter((n) => present.has(n)));
  }

  /** @param {string} name */
  function limiterOf(name) {
    if (Object.hasOwn(byName, name)) return byName[/** @type {LimiterName} */ (name)];
    return layers().find((l) => l.config.name === name);
  }

  /**
   * Lifts one auth layer's lockout: a pair (`key` the client, `account`), an account under attack
   * (`account`), a sprayer (`key`), or the scope budget (neither), in `scope` or every class.
   * @param {LayerName} name @param {Record<string, unknown>} p @param {Record<string, unknown>} by
   */
  async function unlockLayer(name, p, by) {
    const needs = LAYERS[name];
    for (const field of /** @type {const} */ (['key', 'account'])) {
      if (needs[field] && p[field] === undefined)
        throw invalidRequest(`invalid ratelimit.unlock params: ${name} needs ${field}`, {
          option: field,
        });
      if (!needs[field] && p[field] !== undefined)
        throw invalidRequest(`invalid ratelimit.unlock params: ${name} takes no ${field}`, {
          option: field,
        });
    }
    const client = needs.key ? clientKeyOf(keyOf(p['key'])) : undefined;
    const account = needs.account ? accountOf(p['account']) : undefined;
    const stored =
      name === 'auth.pair'
        ? `${client}\u0000account:${account}`
        : name === 'auth.account'
          ? `account:${account}`
          : name === 'auth.spray'
            ? /** @type {string} */ (client)
            : '*';
    const limiter = /** @type {FailureLimiter} */ (limiterOf(name));
    const scopes = p['scope'] === undefined ? SCOPES.auth : [scopeOf(p['scope'])];
    const subject = { key: stored, exempt: false };
    /** @type {string[]} */
    const unlocked = [];
    for (const scope of scopes) {
      const before = await limiter.check(subject, scope);
      await limiter.reset(subject, scope);
      if (before.reason === 'locked') unlocked.push(scope);
    }
    const named = [client, account === undefined ? undefined : `account ${account}`]
      .filter((x) => x !== undefined)
      .join(', ');
    logger.warn(
      {
        event: 'ratelimit.unlock',
        limiter: name,
        ...(client !== undefined && { key: client }),
        ...(account !== undefined && { account }),
        scopes,
        unlocked,
        ...by,
      },
      `operator unlocked ${named === '' ? 'the scope budget' : named} on ${name} (${unlocked.length > 0 ? unlocked.join(', ') : 'nothing was locked'})`,
    );
    changed();
    return {
      limiter: name,
      ...(client !== undefined && { key: client }),
      ...(account !== undefined && { account }),
      unlocked,
    };
  }

  /** The access list, or the error of a gateway built without one. */
  function list() {
    if (access === undefined) throw invalidRequest('this gateway has no access list');
    return access;
  }

  /**
   * The allow and deny rules in force, denies first.
   * @param {unknown} params `{ limit? }`
   */
  async function accessRules(params) {
    const p = paramsOf(params, 'ratelimit.access', ['limit']);
    const limit = p['limit'] === undefined ? DEFAULT_LIST : listLimit(p['limit']);
    const rules = await list().rules();
    return { rules: rules.slice(0, limit).map(ruleOut), truncated: rules.length > limit };
  }

  /**
   * Sets an allow or deny rule (replacing the subject's).
   * @param {'allow' | 'deny'} action @param {unknown} params `{ subject, reason?, ms? }`
   * @param {Record<string, unknown>} by who asked (logged)
   */
  async function setRule(action, params, by) {
    const method = `ratelimit.${action}`;
    const p = paramsOf(params, method, ['subject', 'reason', 'ms']);
    const subject = subjectOf(p['subject'], method);
    const rule = await callCore(() =>
      list()[action](/** @type {string} */ (subject), {
        ...(p['reason'] !== undefined && { reason: /** @type {string} */ (p['reason']) }),
        ...(p['ms'] !== undefined && { ms: /** @type {number} */ (p['ms']) }),
      }),
    );
    logger.warn(
      {
        event: method,
        subject: rule.subject,
        reason: rule.reason,
        ...(p['ms'] !== undefined && { ms: p['ms'] }),
        ...by,
      },
      `operator ${action === 'deny' ? 'denied' : 'allowed'} ${rule.subject}${rule.reason === '' ? '' : ` (${rule.reason})`}`,
    );
    changed();
    return { rule: ruleOut(rule) };
  }

  /**
   * Removes the rule of a subject.
   * @param {unknown} params `{ subject }` @param {Record<string, unknown>} by who asked (logged)
   */
  async function unlist(params, by) {
    const p = paramsOf(params, 'ratelimit.unlist', ['subject']);
    const subject = subjectOf(p['subject'], 'ratelimit.unlist');
    const removed = await callCore(() => list().remove(subject));
    logger.warn(
      { event: 'ratelimit.unlist', subject, removed, ...by },
      `operator removed the access rule of ${subject}${removed ? '' : ' (none was in force)'}`,
    );
    changed();
    return { subject, removed };
  }

  return {
    lockouts,
    unlock,
    ban,
    access: accessRules,
    allow: (/** @type {unknown} */ params, /** @type {Record<string, unknown>} */ by) =>
      setRule('allow', params, by),
    deny: (/** @type {unknown} */ params, /** @type {Record<string, unknown>} */ by) =>
      setRule('deny', params, by),
    unlist,
  };
}

/**
 * A listed key as an operator names it: a pair's `<client>\0account:<name>` as the client and
 * the account, an account layer's `account:<name>` with the account.
 * @param {string} key
 */
function layerKey(key) {
  const nul = key.indexOf('\u0000');
  if (nul >= 0) return { key: key.slice(0, nul), account: key.slice(nul + 1 + 'account:'.length) };
  if (key.startsWith('account:')) return { key, account: key.slice('account:'.length) };
  return { key };
}

/** A client as the layers key it: an IP by its canonical key (IPv6 by its /64), else as given. @param {string} key */
function clientKeyOf(key) {
  return ipKey(key) ?? key;
}

/** @param {unknown} value */
function accountOf(value) {
  if (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_ACCOUNT &&
    !/[\p{Cc}\p{Surrogate}]/u.test(value)
  )
    return value;
  throw invalidRequest(
    `invalid params: account must be 1 to ${MAX_ACCOUNT} characters without control characters`,
    { option: 'account' },
  );
}

/** @param {unknown} value @param {string} method */
function subjectOf(value, method) {
  if (typeof value === 'string' && value.length > 0 && value.length <= MAX_KEY) return value;
  throw invalidRequest(
    `invalid ${method} params: subject must be an IP address or CIDR network, account:<name> or origin:<origin>`,
    { option: 'subject' },
  );
}

/** A rule as the RPC answers it: `until` null for one that lasts until removed. @param {AccessRule} r */
function ruleOut(r) {
  return { subject: r.subject, action: r.action, reason: r.reason, until: r.until ?? null };
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
 * @param {string[]} [layers] the layer names, for the message
 * @returns {LimiterName}
 */
function limiterName(value, layers = /** @type {string[]} */ ([])) {
  if (value === 'auth' || value === 'auth-browser' || value === 'webhook') return value;
  const all = [...names3(), ...layers];
  throw invalidRequest(`invalid params: limiter must be one of ${all.join(', ')}`, {
    option: 'limiter',
    limiters: all,
  });
}

/**
 * A limiter or layer name (a listing names either).
 * @param {unknown} value @param {string[]} layers
 * @returns {string}
 */
function anyLimiterName(value, layers) {
  if (typeof value === 'string' && layers.includes(value)) return value;
  return limiterName(value, layers);
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
