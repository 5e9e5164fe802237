import type { OptionCheck } from '@portcullis/core/adapter';

/** A string (possibly empty: an empty prefix is legitimate on a dedicated Redis database). */
export const string: OptionCheck<string> = (value, fail) =>
  typeof value === 'string' ? value : fail('a string');

/** A plain object (its contents are validated by whoever consumes it). */
export function plainObject<T>(): OptionCheck<T> {
  return (value, fail) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as T)
      : fail('an object');
}
