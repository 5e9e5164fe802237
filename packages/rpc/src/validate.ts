import { type OptionCheck, PortcullisConfigError } from '@portcullis/core';

/*
 * Option checks for `parseOptions`. They never coerce: a wrong value fails with the option's
 * `ERR_PORTCULLIS_*` code (derived from its name by core's `parseOptions`).
 */

/** An integer ≥ `min`. `NaN`, fractions and infinities fail. */
export function integer(min: number): OptionCheck<number> {
  return (value, fail) =>
    typeof value === 'number' && Number.isSafeInteger(value) && value >= min
      ? value
      : fail(`an integer ≥ ${min}`);
}

/** A boolean (no truthy strings). */
export const boolean: OptionCheck<boolean> = (value, fail) =>
  typeof value === 'boolean' ? value : fail('a boolean');

/** A function. */
export function func<F>(): OptionCheck<F> {
  return (value, fail) => (typeof value === 'function' ? (value as F) : fail('a function'));
}

/** A non-empty string. */
export const nonEmptyString: OptionCheck<string> = (value, fail) =>
  typeof value === 'string' && value.length > 0 ? value : fail('a non-empty string');

/** An object with every one of the named methods. */
export function withMethods<T>(...methods: string[]): OptionCheck<T> {
  const expected = `an object with ${methods.map((m) => `${m}()`).join(', ')}`;
  return (value, fail) => {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
      return fail(expected);
    }
    for (const m of methods) {
      if (typeof (value as Record<string, unknown>)[m] !== 'function') return fail(expected);
    }
    return value as T;
  };
}

/** Throws the config error for `dispatch` unless it is a function. */
export function checkDispatch(dispatch: unknown, where: string): void {
  if (typeof dispatch !== 'function') {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_DISPATCH',
      'dispatch',
      `${where}: the dispatcher must be a function, got ${dispatch === null ? 'null' : typeof dispatch}`,
    );
  }
}
