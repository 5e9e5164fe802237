// The gateway's configuration: a JSON file with the seed's shape, validated strictly at start.
// Limiter numbers are checked by building the core limiter they configure, so an invalid value is
// refused with core's own PortcullisConfigError message and code, prefixed with the option's path.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createFailureLimiter, PortcullisConfigError } from '@portcullis/core';
import { createClientResolver } from '@portcullis/core/adapter';

/**
 * @typedef {object} RateLimitConfig
 * @property {number} maxAttempts failures within `windowMs` that start a lockout
 * @property {number} windowMs sliding window over which failures count
 * @property {number} lockoutMs how long a lockout lasts
 * @property {boolean} exemptLoopback whether a clean direct-local client is exempt
 */

/**
 * @typedef {object} GatewayConfig
 * @property {{
 *   name: string,
 *   port: number,
 *   auth: { token?: string, password?: string, rateLimit: RateLimitConfig },
 *   trustedProxies: string[],
 * }} gateway
 * @property {{ token?: string }} hooks
 * @property {{ entries: Record<string, { enabled: boolean }> }} plugins
 */

/** The default port of the reference gateway. */
export const DEFAULT_PORT = 18789;

/** What `config.get` shows instead of a secret; sending it back keeps the secret unchanged. */
export const REDACTED = '__REDACTED__';

const RATE_LIMIT_KEYS = ['maxAttempts', 'windowMs', 'lockoutMs', 'exemptLoopback'];

/**
 * A config error naming the option by its path (`gateway.auth.rateLimit.maxAttempts`).
 * @param {string} code stable code, `ERR_PORTCULLIS_*`
 * @param {string} path the option's path
 * @param {string} detail what is wrong
 */
function configError(code, path, detail) {
  return new PortcullisConfigError(code, path, `${path}: ${detail}`);
}

/** @param {unknown} value */
function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * @param {unknown} value
 * @param {string} path
 * @returns {Record<string, unknown>}
 */
function objectAt(value, path) {
  if (value === undefined) return {};
  if (!isObject(value))
    throw configError('ERR_PORTCULLIS_INVALID_OPTIONS', path, 'must be an object');
  return /** @type {Record<string, unknown>} */ (value);
}

/**
 * @param {Record<string, unknown>} obj
 * @param {readonly string[]} known
 * @param {string} path
 */
function noUnknownKeys(obj, known, path) {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      const at = path === '' ? key : `${path}.${key}`;
      throw configError(
        'ERR_PORTCULLIS_UNKNOWN_OPTION',
        at,
        `unknown option (expected one of ${known.join(', ')})`,
      );
    }
  }
}

/**
 * @param {unknown} value
 * @param {string} path
 * @returns {string | undefined}
 */
function secretAt(value, path) {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 512)
    throw configError(
      'ERR_PORTCULLIS_SECRET',
      path,
      'must be a non-empty string of at most 512 characters',
    );
  return value;
}

/**
 * Runs a core validation and re-throws its error with the option's full path in front.
 * @template T
 * @param {string} prefix path of the object the core factory was given
 * @param {() => T} fn
 * @returns {T}
 */
function withPath(prefix, fn) {
  try {
    return fn();
  } catch (error) {
    if (error instanceof PortcullisConfigError) {
      const path = error.option === 'options' ? prefix : `${prefix}.${error.option}`;
      throw new PortcullisConfigError(error.code, path, `${path}: ${error.message}`);
    }
    throw error;
  }
}

/**
 * Validates a config object and fills in defaults. Nothing is coerced: a wrong type, a range core
 * refuses or an unknown option name throws {@link PortcullisConfigError} naming the option's path.
 * @param {unknown} input the parsed JSON
 * @returns {GatewayConfig}
 */
export function parseConfig(input) {
  const root = objectAt(input, 'config');
  noUnknownKeys(root, ['$schema', 'gateway', 'hooks', 'plugins'], '');

  const gw = objectAt(root['gateway'], 'gateway');
  noUnknownKeys(gw, ['name', 'port', 'auth', 'trustedProxies'], 'gateway');
  const name = gw['name'] ?? 'portcullis-gateway';
  if (typeof name !== 'string' || !/^[\w .:@-]{1,64}$/.test(name))
    throw configError(
      'ERR_PORTCULLIS_NAME',
      'gateway.name',
      'must be 1–64 letters, digits, spaces or ._:@-',
    );
  const port = gw['port'] ?? DEFAULT_PORT;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65_535)
    throw configError('ERR_PORTCULLIS_PORT', 'gateway.port', 'must be an integer from 0 to 65535');

  const auth = objectAt(gw['auth'], 'gateway.auth');
  noUnknownKeys(auth, ['token', 'password', 'rateLimit'], 'gateway.auth');
  const token = secretAt(auth['token'], 'gateway.auth.token');
  const password = secretAt(auth['password'], 'gateway.auth.password');
  if (token === undefined && password === undefined)
    throw configError(
      'ERR_PORTCULLIS_TOKEN',
      'gateway.auth.token',
      'set gateway.auth.token or gateway.auth.password: without either nobody can connect',
    );

  const rl = objectAt(auth['rateLimit'], 'gateway.auth.rateLimit');
  noUnknownKeys(rl, RATE_LIMIT_KEYS, 'gateway.auth.rateLimit');
  // Core decides what a valid number is: build (and drop) the limiter the numbers configure.
  const probe = withPath('gateway.auth.rateLimit', () =>
    createFailureLimiter(/** @type {import('@portcullis/core').FailureLimiterOptions} */ (rl)),
  );
  const rateLimit = {
    maxAttempts: probe.config.maxAttempts,
    windowMs: probe.config.windowMs,
    lockoutMs: probe.config.lockoutMs,
    exemptLoopback: probe.config.exemptLoopback,
  };
  // Built on the memory store, whose close is synchronous and cannot fail: nothing to await.
  void probe.close();

  const trustedProxies = gw['trustedProxies'] ?? [];
  withPath('gateway', () =>
    createClientResolver({ trustedProxies: /** @type {string[]} */ (trustedProxies) }),
  );

  const hooks = objectAt(root['hooks'], 'hooks');
  noUnknownKeys(hooks, ['token'], 'hooks');
  const hooksToken = secretAt(hooks['token'], 'hooks.token');

  const plugins = objectAt(root['plugins'], 'plugins');
  noUnknownKeys(plugins, ['entries'], 'plugins');
  const rawEntries = objectAt(plugins['entries'], 'plugins.entries');
  /** @type {Record<string, { enabled: boolean }>} */
  const entries = {};
  for (const [id, entry] of Object.entries(rawEntries)) {
    const path = `plugins.entries.${id}`;
    if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(id))
      throw configError('ERR_PORTCULLIS_PLUGIN_ID', path, 'plugin ids are 1–64 of a-z 0-9 . _ -');
    const e = objectAt(entry, path);
    noUnknownKeys(e, ['enabled'], path);
    const enabled = e['enabled'] ?? false;
    if (typeof enabled !== 'boolean')
      throw configError('ERR_PORTCULLIS_ENABLED', `${path}.enabled`, 'must be a boolean');
    entries[id] = { enabled };
  }

  return {
    gateway: {
      name,
      port,
      auth: {
        ...(token !== undefined && { token }),
        ...(password !== undefined && { password }),
        rateLimit,
      },
      trustedProxies: [.../** @type {string[]} */ (trustedProxies)],
    },
    hooks: hooksToken === undefined ? {} : { token: hooksToken },
    plugins: { entries },
  };
}

/**
 * Reads and validates a config file.
 * @param {string} path
 * @returns {GatewayConfig}
 * @throws {PortcullisConfigError} for an invalid config; a plain `Error` when the file cannot be read or parsed
 */
export function loadConfig(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read config ${path}: ${/** @type {Error} */ (error).message}`);
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`config ${path} is not valid JSON: ${/** @type {Error} */ (error).message}`);
  }
  return parseConfig(json);
}

/**
 * RFC 7396 JSON merge patch: objects merge recursively, `null` deletes, anything else replaces.
 * @param {unknown} target
 * @param {unknown} patch
 * @returns {unknown}
 */
export function mergePatch(target, patch) {
  if (!isObject(patch)) return patch;
  /** @type {Record<string, unknown>} */
  const out = isObject(target) ? { .../** @type {Record<string, unknown>} */ (target) } : {};
  for (const [key, value] of Object.entries(/** @type {Record<string, unknown>} */ (patch))) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** @type {ReadonlyArray<readonly [string, string]>} */
const SECRETS = [
  ['gateway.auth', 'token'],
  ['gateway.auth', 'password'],
  ['hooks', 'token'],
];

/**
 * @param {unknown} obj
 * @param {string} path dotted
 * @returns {Record<string, unknown> | undefined}
 */
function at(obj, path) {
  let cur = obj;
  for (const part of path.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = /** @type {Record<string, unknown>} */ (cur)[part];
  }
  return isObject(cur) ? /** @type {Record<string, unknown>} */ (cur) : undefined;
}

/**
 * A deep copy with every secret replaced by {@link REDACTED} (what `config.get` returns).
 * @param {GatewayConfig} config
 * @returns {unknown}
 */
export function redact(config) {
  const copy = structuredClone(config);
  for (const [path, key] of SECRETS) {
    const obj = at(copy, path);
    if (obj !== undefined && obj[key] !== undefined) obj[key] = REDACTED;
  }
  return copy;
}

/**
 * Puts the current secrets back where a candidate config still says {@link REDACTED}, so a config
 * read with `config.get` can be edited and applied without repeating the secrets.
 * @param {unknown} candidate a parsed, not yet validated config (modified in place)
 * @param {GatewayConfig} current
 * @returns {unknown}
 */
export function restoreSecrets(candidate, current) {
  for (const [path, key] of SECRETS) {
    const obj = at(candidate, path);
    if (obj !== undefined && obj[key] === REDACTED) {
      const was = at(current, path)?.[key];
      if (was === undefined) delete obj[key];
      else obj[key] = was;
    }
  }
  return candidate;
}

/**
 * A short content hash of a config (secrets included), to tell versions apart.
 * @param {GatewayConfig} config
 */
export function configHash(config) {
  return createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 16);
}

/**
 * The config in force. `config.patch`, `config.apply`, `plugins.setEnabled` and a restart replace
 * it; everything else reads it on each use, so a new secret takes effect at once. Port and limiter
 * numbers are read once, from the boot config.
 * @param {GatewayConfig} boot
 */
export function runningConfig(boot) {
  let config = boot;
  /** @type {Array<(next: GatewayConfig) => void>} */
  const listeners = [];
  return {
    /** @returns {GatewayConfig} */
    current: () => config,
    /**
     * Puts `next` in force and tells every listener (the limiters take its numbers live).
     * @param {GatewayConfig} next
     */
    replace(next) {
      config = next;
      for (const listener of listeners) listener(next);
    },
    /** @param {(next: GatewayConfig) => void} listener called after every replace */
    onReplace(listener) {
      listeners.push(listener);
    },
  };
}

/** @typedef {ReturnType<typeof runningConfig>} RunningConfig */
