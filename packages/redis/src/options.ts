import { type OptionCheck, PortcullisConfigError } from '@portcullis/core';

/** An integer within `[min, max]`; `NaN`, fractions, infinities and strings are rejected. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER): OptionCheck<number> {
  const expected =
    max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
  return (value, fail) =>
    typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
      ? value
      : fail(expected);
}

/** One of a fixed set of strings. */
export function oneOf<T extends string>(values: readonly T[]): OptionCheck<T> {
  const expected = `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
  return (value, fail) => (values.includes(value as T) ? (value as T) : fail(expected));
}

/** A function. */
export function func<T>(): OptionCheck<T> {
  return (value, fail) => (typeof value === 'function' ? (value as T) : fail('a function'));
}

/** A string (possibly empty: an empty prefix is legitimate on a dedicated Redis database). */
export const string: OptionCheck<string> = (value, fail) =>
  typeof value === 'string' ? value : fail('a string');

/** An object that has every one of the named methods. */
export function withMethods<T>(...methods: string[]): OptionCheck<T> {
  const expected = `an object with ${methods.map((m) => `${m}()`).join(', ')}`;
  return (value, fail) => {
    if (value === null || typeof value !== 'object') return fail(expected);
    for (const m of methods) {
      if (typeof (value as Record<string, unknown>)[m] !== 'function') return fail(expected);
    }
    return value as T;
  };
}

/** A plain object (its contents are validated by whoever consumes it). */
export function plainObject<T>(): OptionCheck<T> {
  return (value, fail) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as T)
      : fail('an object');
}

/** Throws the config error of a required option that is missing. */
export function missing(option: string, code: string, expected: string, where: string): never {
  throw new PortcullisConfigError(
    code,
    option,
    `${where}: option "${option}" is required (${expected})`,
  );
}
