import { closestName, type OptionCheck } from './options.js';

/**
 * The misconfiguration warnings: a setup that works, but not as meant, is told once, with one of
 * these codes in `logger.warn`'s first argument (or as a process warning with that code). Each can
 * be switched off by the `warnings` option. What happens at run time (a lockout, an overflow, a
 * store outage) is reported, not warned about, and is not switched here.
 */
export const WARNING_CODES = [
  'PORTCULLIS_UNTRUSTED_FORWARDED',
  'PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY',
  'PORTCULLIS_NAME_CLASH',
  'PORTCULLIS_DUPLICATE_POLICY',
  'PORTCULLIS_NO_CLIENT_ADDRESS',
] as const;

/** One of the {@link WARNING_CODES}. */
export type WarningCode = (typeof WARNING_CODES)[number];

/**
 * The `warnings` option, as express-rate-limit's `validate`: `{ PORTCULLIS_NAME_CLASH: false }`
 * switches that warning off for the limiter, gate or middleware it is given to (and what they
 * build); a code left out, or `true`, keeps it.
 */
export type Warnings = { readonly [C in WarningCode]?: boolean };

/** Checks the `warnings` option: an object whose names are warning codes and values booleans. */
export const warningsOption: OptionCheck<Warnings> = (value, fail) => {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return fail(`an object of warning codes to booleans ({ PORTCULLIS_NAME_CLASH: false })`);
  for (const [code, on] of Object.entries(value)) {
    if (!(WARNING_CODES as readonly string[]).includes(code)) {
      const hint = closestName(code, WARNING_CODES);
      return fail(
        `an object of warning codes to booleans; "${code}" is no warning code${hint === undefined ? '' : ` (did you mean "${hint}"?)`} (codes: ${WARNING_CODES.join(', ')})`,
      );
    }
    if (typeof on !== 'boolean') return fail(`an object of warning codes to booleans ("${code}")`);
  }
  return value as Warnings;
};

/** Whether `code` was switched off. */
export function silenced(warnings: Warnings | undefined, code: WarningCode): boolean {
  return warnings !== undefined && warnings[code] === false;
}
