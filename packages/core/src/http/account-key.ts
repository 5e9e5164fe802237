/** Half of a UTF-16 pair without its other half (in `u` mode a whole pair is one code point). */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Texts longer than this share `account:invalid`. */
const MAX_ACCOUNT_LENGTH = 256;

/**
 * The key of the account an attempt names: `account:<text>`, or the shared `account:invalid` for
 * what cannot be one (a huge, empty or non-string value, malformed UTF-16: a shared store would
 * turn two different malformed texts into one key). `undefined` stays undefined (no account).
 */
export function accountKey(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_ACCOUNT_LENGTH ||
    LONE_SURROGATE.test(value)
  )
    return 'account:invalid';
  return `account:${value}`;
}
