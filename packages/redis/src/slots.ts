/**
 * Redis Cluster hash slots, for the lockout index: a script may touch only keys of one slot, so
 * the index entry of a lockout lives in a sorted set of the lockout key's own slot. The set's name
 * carries a hash tag (`{…}`) chosen to hash to that slot; listing reads the sets of every slot.
 */

/** How many hash slots a Redis Cluster has. */
export const SLOTS = 16_384;

/** CRC16-CCITT (XModem), the checksum Redis Cluster hashes keys with, over UTF-8 bytes. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

const encoder = new TextEncoder();

/**
 * The hash slot of `key`, as Redis Cluster computes it: of the text between the first `{` and the
 * next `}` when that is not empty (a hash tag), else of the whole key.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(encoder.encode(key.slice(open + 1, close))) % SLOTS;
  }
  return crc16(encoder.encode(key)) % SLOTS;
}

let tags: string[] | undefined;

/**
 * A short text that hashes to `slot`: the hash tag of that slot's index set. The table is made on
 * first use, by walking texts of the alphabet below in order of length (every slot is met before
 * four characters run out), so every process names each slot's set the same way.
 */
export function slotTag(slot: number): string {
  if (tags === undefined) tags = makeTags();
  return tags[slot] as string;
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

function makeTags(): string[] {
  const out: string[] = new Array(SLOTS);
  let missing = SLOTS;
  const bytes = new Uint8Array(4);
  for (let length = 1; length <= 4 && missing > 0; length++) {
    const total = ALPHABET.length ** length;
    for (let n = 0; n < total && missing > 0; n++) {
      let text = '';
      for (let i = 0, m = n; i < length; i++, m = Math.floor(m / ALPHABET.length)) {
        const c = ALPHABET[m % ALPHABET.length] as string;
        text = c + text;
      }
      for (let i = 0; i < length; i++) bytes[i] = text.charCodeAt(i);
      const slot = crc16(bytes.subarray(0, length)) % SLOTS;
      if (out[slot] === undefined) {
        out[slot] = text;
        missing--;
      }
    }
  }
  if (missing > 0) throw new Error('slotTag: a hash slot without a tag (unreachable)');
  return out;
}
