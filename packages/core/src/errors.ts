/**
 * Thrown at construction when an option has the wrong type or range, or is not an option at all.
 * Recognise it by `code` (stable, `ERR_PORTCULLIS_*`) as well as by `instanceof`.
 */
export class PortcullisConfigError extends Error {
  /** Stable machine-readable code, e.g. `ERR_PORTCULLIS_MAX_ATTEMPTS`. */
  readonly code: string;
  /** The option at fault, e.g. `maxAttempts`, or the unknown name that was passed. */
  readonly option: string;

  /**
   * @param code stable error code
   * @param option the option at fault
   * @param message human-readable explanation
   */
  constructor(code: string, option: string, message: string) {
    super(message);
    this.name = 'PortcullisConfigError';
    this.code = code;
    this.option = option;
  }
}

/** The error code for a bad value of `option`: `maxAttempts` → `ERR_PORTCULLIS_MAX_ATTEMPTS`. */
export function optionErrorCode(option: string): string {
  return `ERR_PORTCULLIS_${option.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;
}

/** The code of the error thrown for an option name a factory does not know. */
export const UNKNOWN_OPTION = 'ERR_PORTCULLIS_UNKNOWN_OPTION';
/** The code of the error thrown when the options argument itself is not a plain object. */
export const INVALID_OPTIONS = 'ERR_PORTCULLIS_INVALID_OPTIONS';
/** The code of the error thrown when a factory is mounted as middleware instead of its result. */
export const FACTORY_NOT_CALLED = 'ERR_PORTCULLIS_FACTORY_NOT_CALLED';
