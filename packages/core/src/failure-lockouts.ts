import { type Decision, withKey } from './decision.js';
import type { FailureKeys } from './failure-keys.js';
import type { BanOptions, LockoutInfo, LockoutsOptions, Subject } from './failure-limiter.js';
import { normalizeScope } from './failure-options.js';
import { integer, parseOptions, required, timerDelay } from './options.js';
import { type MaybePromise, mapMaybe } from './promise.js';
import type { FailureDecision } from './store.js';

const lockoutsSpec = {
  scope: (value: unknown, fail: (expected: string) => never) =>
    typeof value === 'string' ? value : fail('a string'),
  limit: integer(1, 100_000),
};

const banSpec = {
  scope: lockoutsSpec.scope,
  ms: timerDelay(1),
};

/**
 * The lockouts in force of the limiter on `keys`, soonest end first (see `FailureLimiter.lockouts`).
 * @throws {PortcullisConfigError} for a wrong option; a `TypeError` when the store cannot list
 */
export function listLockouts(
  keys: FailureKeys,
  options?: LockoutsOptions,
): MaybePromise<LockoutInfo[]> {
  const o = parseOptions(options ?? {}, lockoutsSpec, 'lockouts');
  const limit = o.limit ?? 1000;
  const only = o.scope === undefined ? undefined : normalizeScope(o.scope);
  const { store, rule } = keys;
  const { namespace, earned } = keys.setup;
  if (typeof store.lockouts !== 'function')
    throw new TypeError('Portcullis: this store cannot list lockouts (it has no Store.lockouts)');
  const prefix = `${namespace}${only === undefined ? '' : `${only}:`}`;
  // A private memory store keeps each scope in a table of its own: it lists them all the same.
  const listed = store.lockouts(prefix, limit, rule);
  return mapMaybe(listed, (found) =>
    found.map((l) => {
      // `<scope>:<subject>` after the namespace: a scope holds no ':' of its own here, the
      // subject may (IPv6, browser-origin:…).
      const rest = l.key.slice(namespace.length);
      const colon = rest.indexOf(':');
      return {
        scope: colon < 0 ? 'default' : rest.slice(0, colon),
        key: colon < 0 ? rest : rest.slice(colon + 1),
        layer: l.ban ? 'ban' : earned,
        until: l.until,
        retryAfterMs: l.retryAfterMs,
      } satisfies LockoutInfo;
    }),
  );
}

/**
 * Locks `subject` out by hand (see `FailureLimiter.ban`): reported like an earned lockout, as the
 * `ban` layer's.
 * @throws {PortcullisConfigError} for a wrong option; a `TypeError` when the store cannot ban
 */
export function banSubject(
  keys: FailureKeys,
  subject: Subject,
  options: BanOptions,
): MaybePromise<Decision> {
  const o = parseOptions(options, banSpec, 'ban');
  const ms = required(o.ms, 'ms', 'an integer from 1 to 2147483647', 'ban') as number;
  const s = keys.subjectOf(subject);
  const sc = normalizeScope(o.scope);
  if (s.exempt) return keys.exempt(s.key);
  const banned = (d: FailureDecision): Decision => {
    const out = withKey(d, s.key);
    // An answer other than locked (the store full of lockouts) started nothing to report.
    if (out.reason === 'locked') keys.reports.banned(sc, s.key, out, ms);
    return keys.reports.dry(out);
  };
  const t = keys.tableOf(sc);
  if (t !== undefined) return banned(t.ban(s.key, keys.rule, ms));
  const { store } = keys;
  if (typeof store.ban !== 'function')
    throw new TypeError('Portcullis: this store cannot ban (it has no Store.ban)');
  return mapMaybe(store.ban(keys.storeKey(sc, s.key), keys.rule, ms), banned);
}
