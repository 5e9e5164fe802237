import { isPromise } from './promise.js';
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

/** A short, printable description of whatever was thrown (never throws itself). */
function describe(error: unknown): string {
  try {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return 'an unprintable value';
  }
}

/** The `code` of every report that an observing user hook (`onLimited`, `onRefused`…) failed. */
export const HOOK_ERROR = 'PORTCULLIS_HOOK_ERROR';

/** What {@link reportHookError} logs besides its code: the hook's name, its error, any context. */
export type HookErrorFields = {
  readonly hook: string;
  readonly err: unknown;
  /** Always {@link HOOK_ERROR}, added by {@link reportHookError}. */
  readonly code?: never;
} & Readonly<Record<string, unknown>>;

/**
 * Reports that the observing user hook `fields.hook` threw or rejected with `fields.err`: to
 * `logger.error({ code: 'PORTCULLIS_HOOK_ERROR', ...fields }, message)`, or, when there is no
 * logger or it fails too, as a process warning with the same code whose text is `message` and a
 * short description of the error. One rule for every package, so a log query for one code finds
 * every broken hook. Never throws.
 */
export function reportHookError(
  logger: Pick<Logger, 'error'> | undefined,
  fields: HookErrorFields,
  message: string,
): void {
  const warn = (): void => {
    try {
      process.emitWarning(`${message}: ${describe(fields.err)}`, { code: HOOK_ERROR });
    } catch {
      // Nothing left to report to.
    }
  };
  if (logger === undefined) {
    warn();
    return;
  }
  // The logger's own failure is not reported separately: the hook's error is what matters.
  callSafely(
    (obj: object, msg: string) => logger.error(obj, msg),
    [{ code: HOOK_ERROR, ...fields }, message],
    warn,
  );
}

function loggerFailed(level: string, msg: string | undefined): (error: unknown) => void {
  return (error) => {
    try {
      process.emitWarning(
        `Portcullis: the logger's ${level}() threw (${describe(error)}); message: ${msg ?? ''}`,
        { code: 'PORTCULLIS_LOGGER_ERROR' },
      );
    } catch {
      // Nothing left to report to.
    }
  };
}

const guarded = new WeakSet<object>();

/**
 * A logger whose calls never throw: a broken logger must not turn a decision (a lockout that was
 * already recorded) into an error answer or a crash. A throw or a rejection becomes one process
 * warning (code `PORTCULLIS_LOGGER_ERROR`) carrying the message that was being logged.
 */
export function safeLogger<L extends Logger | Pick<Logger, 'warn'>>(logger: L): L;
export function safeLogger<L extends Logger | Pick<Logger, 'warn'>>(
  logger: L | undefined,
): L | undefined;
export function safeLogger<L extends Logger | Pick<Logger, 'warn'>>(
  logger: L | undefined,
): L | undefined {
  if (logger === undefined || guarded.has(logger)) return logger;
  const target = logger as Partial<Logger>;
  const wrap =
    (level: 'warn' | 'error') =>
    (obj: object, msg?: string): void => {
      const method = target[level];
      if (typeof method !== 'function') return;
      // The message argument is passed on only when given, as the caller wrote it.
      callSafely(
        () => (msg === undefined ? method.call(target, obj) : method.call(target, obj, msg)),
        [],
        loggerFailed(level, msg),
      );
    };
  const safe = { warn: wrap('warn'), error: wrap('error') };
  guarded.add(safe);
  return safe as unknown as L;
}

/**
 * Tells the operator something once it happened: through the logger when there is one (made safe,
 * so a broken logger cannot throw here), else as a process warning carrying the same code.
 */
export function tell(
  logger: Logger | Pick<Logger, 'warn'> | undefined,
  level: 'warn' | 'error',
  fields: { readonly code: string } & Record<string, unknown>,
  message: string,
): void {
  const safe = safeLogger(logger) as Partial<Logger> | undefined;
  const method = safe?.[level];
  if (method !== undefined) method.call(safe, fields, message);
  else process.emitWarning(message, { code: fields.code });
}
