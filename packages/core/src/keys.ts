import { createHash } from 'node:crypto';

/** Keys longer than this are replaced by a digest, so an attacker cannot make the table huge. */
export const MAX_KEY_LENGTH = 256;

/**
 * A bounded, collision-resistant form of a caller's key: short keys stay as they are, longer ones
 * become `sha256:<hex>` (distinct keys stay distinct; nothing is truncated into a shared bucket).
 */
export function boundedKey(key: string): string {
  if (typeof key !== 'string') {
    throw new TypeError(
      `Portcullis: a limiter key must be a string, got ${key === null ? 'null' : typeof key}`,
    );
  }
  return key.length <= MAX_KEY_LENGTH
    ? key
    : `sha256:${createHash('sha256').update(key).digest('hex')}`;
}
