import type { Logger } from '@portcullis/core';

/*
 * User callbacks that only observe (hooks such as `onLimited`, loggers) must never break a call,
 * crash the process or leave an unhandled rejection behind: what they throw or reject with is
 * caught and reported here. Callbacks that decide (`identity`, `isKnown`, the dispatcher, a
 * store) are not run through this: their errors fail the call, as a rejection.
 */

/** The `code` of the process warning emitted when a callback fails and no logger can take it. */
export const CALLBACK_WARNING = 'PORTCULLIS_CALLBACK_ERROR';

function describe(error: unknown): string {
  try {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return 'an unprintable value';
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** Last resort: a process warning (never throws). */
function emit(text: string): void {
  try {
    process.emitWarning(text, { code: CALLBACK_WARNING });
  } catch {
    // Nothing left to report to.
  }
}

/**
 * Runs `fn(...args)` and makes whatever it throws, or rejects with, harmless: `onError` is called
 * with it instead (synchronously for a throw, later for a rejection). Returns nothing on purpose.
 */
function guard<A extends unknown[]>(
  fn: (...args: A) => unknown,
  args: A,
  onError: (error: unknown) => void,
): void {
  try {
    const result = fn(...args);
    if (isThenable(result)) Promise.resolve(result).then(undefined, onError);
  } catch (error) {
    onError(error);
  }
}

/**
 * Reports `error`, thrown by the user callback `callback` of `where`, to `logger.error` — or, when
 * there is no logger or it fails too, as a process warning with code `PORTCULLIS_CALLBACK_ERROR`.
 * Never throws.
 */
export function reportCallbackError(
  logger: Logger | undefined,
  where: string,
  callback: string,
  error: unknown,
): void {
  const message = `Portcullis: ${where}: ${callback} threw; the call went on without it`;
  const fallback = () => emit(`${message}: ${describe(error)}`);
  if (logger === undefined) {
    fallback();
    return;
  }
  guard(
    (obj: object, msg: string) => logger.error(obj, msg),
    [{ code: CALLBACK_WARNING, callback, err: error }, message],
    fallback,
  );
}

/**
 * Calls the observing hook `fn(arg)`; a throw or a rejection is reported (see
 * {@link reportCallbackError}), never propagated.
 */
export function callHook<A>(
  fn: (arg: A) => unknown,
  arg: A,
  logger: Logger | undefined,
  where: string,
  callback: string,
): void {
  guard(fn, [arg], (error) => reportCallbackError(logger, where, callback, error));
}

/**
 * A logger that cannot fail: each `warn` / `error` goes to `logger`, and if that throws or rejects
 * the line is emitted as a process warning instead. Handed to core limiters so a broken logger never
 * turns an answer into an exception.
 */
export function safeLogger(logger: Logger): Logger {
  const fallback = (level: string, msg: string | undefined) => (error: unknown) =>
    emit(`Portcullis: the logger's ${level}() threw (${describe(error)}); message: ${msg ?? ''}`);
  // The message argument is passed on only when given, as the caller wrote it.
  const call =
    (level: 'warn' | 'error') =>
    (obj: object, msg?: string): void =>
      guard(
        () => (msg === undefined ? logger[level](obj) : logger[level](obj, msg)),
        [],
        fallback(level, msg),
      );
  return { warn: call('warn'), error: call('error') };
}
