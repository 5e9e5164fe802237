import { isPromise } from './clock.js';
import type { Logger } from './events.js';

/**
 * Runs a user callback whose failure must not reach the caller (a hook after a decision: logging,
 * metrics). A throw, or a rejection of a returned promise, goes to `report` instead of becoming an
 * uncaught exception or an unhandled rejection that could end the process.
 */
export function callSafely<A extends unknown[]>(
  hook: ((...args: A) => unknown) | undefined,
  args: A,
  report: (error: unknown) => void,
): void {
  if (hook === undefined) return;
  try {
    const out = hook(...args);
    if (isPromise(out)) out.then(undefined, report);
  } catch (error) {
    report(error);
  }
}

function loggerFailed(error: unknown): void {
  process.emitWarning(`Portcullis: the logger threw: ${String(error)}`, {
    code: 'PORTCULLIS_LOGGER_ERROR',
  });
}

const guarded = new WeakSet<Logger>();

/**
 * A logger whose calls never throw: a broken logger must not turn a decision (a lockout that was
 * already recorded) into an error answer or a crash. Its failures become one process warning each.
 */
export function safeLogger<L extends Logger | Pick<Logger, 'warn'>>(logger: L): L;
export function safeLogger<L extends Logger | Pick<Logger, 'warn'>>(
  logger: L | undefined,
): L | undefined;
export function safeLogger<L extends Logger | Pick<Logger, 'warn'>>(
  logger: L | undefined,
): L | undefined {
  if (logger === undefined || guarded.has(logger as Logger)) return logger;
  const target = logger as Partial<Logger>;
  const wrap =
    (level: 'warn' | 'error') =>
    (obj: object, msg?: string): void => {
      try {
        const out = (target[level] as (o: object, m?: string) => unknown).call(target, obj, msg);
        if (isPromise(out)) out.then(undefined, loggerFailed);
      } catch (error) {
        loggerFailed(error);
      }
    };
  const safe = {
    warn: wrap('warn'),
    error: typeof target.error === 'function' ? wrap('error') : (_obj: object, _msg?: string) => {},
  };
  guarded.add(safe);
  return safe as unknown as L;
}
