// The secrets a client can present, and how each is checked: the shared token, the password and
// the webhook token are compared in constant time; `Authorization: Bearer` is read the same way
// for webhooks and the status endpoints; device tokens are issued at `connect` and looked up later.
// Every check answers with core's AuthOutcome ('ok', 'invalid', 'missing'), which is what the
// gates and createConnectAuth count towards a lockout.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** @import { AuthOutcome } from '@portcullis/core' */
/** @import { IncomingMessage } from 'node:http' */

/** Most issued device tokens remembered (the oldest device is forgotten first). */
const MAX_DEVICES = 1_000;

/**
 * A string compared in constant time (both sides hashed to the same length first).
 * @param {string} given
 * @param {string | undefined} expected
 * @returns {AuthOutcome}
 */
export function compareSecret(given, expected) {
  if (expected === undefined) return 'invalid';
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) ? 'ok' : 'invalid';
}

/**
 * The `Authorization: Bearer <token>` header compared with `expected`; no such header is missing.
 * @param {IncomingMessage} req
 * @param {string | undefined} expected
 * @returns {AuthOutcome}
 */
export function bearerOutcome(req, expected) {
  const header = req.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer +(\S+)\s*$/i.exec(header) : null;
  if (match === null) return 'missing';
  return compareSecret(/** @type {string} */ (match[1]), expected);
}

/**
 * The device tokens this gateway has issued, both ways round, bounded by `MAX_DEVICES`.
 * A device that connects with `device.id` gets one and may later connect with it alone.
 */
export function createDeviceTokens() {
  /** @type {Map<string, string>} device id → device token */
  const byDevice = new Map();
  /** @type {Map<string, string>} device token → device id */
  const owners = new Map();

  return {
    /**
     * Issues (or rotates) the token `deviceId` can connect with (`auth: { deviceToken }`).
     * @param {string} deviceId
     */
    issue(deviceId) {
      const old = byDevice.get(deviceId);
      if (old !== undefined) {
        byDevice.delete(deviceId);
        owners.delete(old);
      } else if (byDevice.size >= MAX_DEVICES) {
        const [oldestId, oldestToken] = /** @type {[string, string]} */ (
          byDevice.entries().next().value
        );
        byDevice.delete(oldestId);
        owners.delete(oldestToken);
      }
      const token = `dev_${randomBytes(24).toString('base64url')}`;
      byDevice.set(deviceId, token);
      owners.set(token, deviceId);
      return token;
    },
    /**
     * The device a token was issued to, if it is still current.
     * @param {string} token
     */
    ownerOf(token) {
      return owners.get(token);
    },
  };
}

/** @typedef {ReturnType<typeof createDeviceTokens>} DeviceTokens */
