import { optionErrorCode, PortcullisConfigError } from './errors.js';

/**
 * The characters a policy name may hold: printable ASCII (%x20-7E) except `"` and `\`. A name goes
 * into `RateLimit-Policy` and `RateLimit` as an RFC 9651 string (`"<name>"`), written as it is:
 * a `"` would end the string early (and let the rest of the name forge another list member), a
 * `\` would start an escape, and a control character (CR, LF) or a non-ASCII one is not allowed in
 * a structured-field string at all (Node refuses a CR or LF in a header value, so every response
 * would fail). Refusing them, rather than escaping `"` and `\`, keeps one spelling of a name in
 * headers, events, logs and store keys.
 */
const VALID = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Why a name is refused: the first character it may not hold. */
function firstInvalid(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
      const code = `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
      const shown = c === 0x22 ? ' (")' : c === 0x5c ? ' (\\)' : '';
      return `${code}${shown} at index ${i}`;
    }
  }
  return '';
}

/**
 * Returns `name` when it can be advertised as a RateLimit policy name; otherwise throws
 * `PortcullisConfigError` `ERR_PORTCULLIS_NAME` saying which character is refused and why.
 * @throws {PortcullisConfigError} for a name that is not a valid RFC 9651 string body
 */
export function checkPolicyName(name: string): string {
  if (VALID.test(name)) return name;
  const shown = JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
  throw new PortcullisConfigError(
    optionErrorCode('name'),
    'name',
    `Portcullis: the policy name ${shown} cannot be advertised: a name goes into the RateLimit-Policy and RateLimit header fields as an RFC 9651 string, so it may hold only printable ASCII (space to "~") other than '"' and '\\' (found ${firstInvalid(name)})`,
  );
}
