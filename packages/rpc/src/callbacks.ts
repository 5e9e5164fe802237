import type { Logger } from '@portcullis/core';
import { callSafely } from '@portcullis/core/adapter';

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

/** Last resort: a process warning (never throws). */
function emit(text: string): void {
  try {
    process.emitWarning(text, { code: CALLBACK_WARNING });
  } catch {
    // Nothing left to report to.
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
  callSafely(
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
  callSafely(fn, [arg], (error) => reportCallbackError(logger, where, callback, error));
}
