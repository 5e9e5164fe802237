import type { Logger } from './events.js';
import { tell } from './safe-call.js';
import type { Clock, Timers } from './clock.js';
import { PortcullisConfigError } from './errors.js';
import { MemoryStore } from './memory-store.js';
import { boolean, nonEmptyString, withMethods } from './options.js';
import { isPromise } from './promise.js';
import type { FailureRule, Store, WindowRule } from './store.js';
import { silenced, type Warnings, warningsOption } from './warnings.js';
import { withoutUndefined } from './without-undefined.js';
import { PerOwner } from './per-owner.js';

/**
 * The options every limiter takes besides its numbers and its store, checked alike by each: the
 * built-in store's clock and timers, the logger, dry run, the name, the warnings switched off.
 */
export const limiterSpec = {
  clock: withMethods<Clock>('now'),
  timers: withMethods<Timers>('setTimeout', 'clearTimeout'),
  logger: withMethods<Logger>('warn', 'error'),
  dryRun: boolean,
  name: nonEmptyString,
  warnings: warningsOption,
};

/** The store a limiter works on, and how its keys are spelled there. */
export interface LimiterStore {
  readonly store: Store;
  /** True when the limiter built the store itself (and so closes it). */
  readonly own: boolean;
  /** `''` for a private store; `<name>:` for a shared one, so two limiters never collide. */
  readonly namespace: string;
}

/**
 * The store of a limiter: the one given, or a private `MemoryStore` built from `maxEntries`,
 * `clock` and `timers`. `maxEntries` with a given store is an error: it would be silently ignored.
 */
export function limiterStore(
  o: { store?: Store; maxEntries?: number; clock?: Clock; timers?: Timers },
  name: string,
  where: string,
): LimiterStore {
  if (o.store !== undefined) {
    if (o.maxEntries !== undefined) {
      throw new PortcullisConfigError(
        'ERR_PORTCULLIS_MAX_ENTRIES',
        'maxEntries',
        `${where}: maxEntries sizes the built-in store; set it on the store you pass instead`,
      );
    }
    return { store: o.store, own: false, namespace: `${name}:` };
  }
  const store = new MemoryStore(
    withoutUndefined({ maxEntries: o.maxEntries, clock: o.clock, timers: o.timers }),
  );
  return { store, own: true, namespace: '' };
}

/**
 * Marks the options of a limiter that is one policy of a per-request `rateLimit`: such limiters
 * share a name and store on purpose (each keeps its keys under its own prefix).
 * @internal
 */
export const POLICY_MEMBER: unique symbol = Symbol('portcullis.policyMember');

const claimed = new PerOwner<Store, string, string>();

/**
 * Records that limiter `name` uses `numbers` on the shared `store`, and warns once when another
 * limiter of the same name already uses other numbers there: both would read and write the same
 * keys under different rules, so neither limit would hold.
 */
export function claimName(
  store: Store,
  name: string,
  numbers: string,
  logger: Pick<Logger, 'warn'> | undefined,
  warnings?: Warnings,
): void {
  if (silenced(warnings, 'PORTCULLIS_NAME_CLASH')) return;
  const names = claimed.of(store);
  const before = names.get(name);
  if (before === undefined) {
    names.set(name, numbers);
    return;
  }
  if (before === numbers || before === 'warned') return;
  names.set(name, 'warned');
  const msg = `Portcullis: two limiters named "${name}" share one store with different numbers (${before} and ${numbers}); they count the same keys under different rules. Give each its own "name".`;
  tell(logger, 'warn', { code: 'PORTCULLIS_NAME_CLASH', limiter: name }, msg);
}

/**
 * Tells the store that the limiter whose keys start with `namespace` now runs under `after`
 * instead of `before` (see `Store.restamp`), so that its counts are kept and read under the new
 * rule. A store without `restamp` is left to re-stamp each key when it is next touched; a restamp
 * that fails is reported, never thrown at the operator who reconfigured.
 */
export function restampStore(
  store: Store,
  namespace: string,
  before: WindowRule | FailureRule,
  after: WindowRule | FailureRule,
  logger: Logger | undefined,
): void {
  if (typeof store.restamp !== 'function') return;
  const report = (error: unknown) =>
    tell(
      logger,
      'error',
      { code: 'PORTCULLIS_RESTAMP_ERROR', err: error },
      `Portcullis: the store could not re-stamp the keys of a reconfigured limiter (${String(error)}); each is re-stamped when it is next touched`,
    );
  try {
    const done = store.restamp(namespace, before, after);
    if (isPromise(done)) done.then(undefined, report);
  } catch (error) {
    report(error);
  }
}
