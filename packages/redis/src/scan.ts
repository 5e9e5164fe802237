// Walking a prefix's keys with SCAN, for size() and the re-stamp walk: each page's limiter keys,
// without the store's own lockout index and registry.

/** One `SCAN cursor MATCH … COUNT …` page: the next cursor and the keys found. */
export type ScanPage = (cursor: string) => Promise<[unknown, unknown[]]>;

/** Escapes glob metacharacters so a prefix matches only itself in `SCAN … MATCH`. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * Calls `onKeys` with the limiter keys of each page `page` returns, from cursor 0 until the cursor
 * is 0 again; keys starting with `<storePrefix>~lockouts` (the lockout index and its registry) or
 * `<storePrefix>~leases:` (concurrency leases, no window or failure state) are left out: a
 * limiter's keys always carry its name.
 */
export async function eachScanPage(
  page: ScanPage,
  storePrefix: string,
  onKeys: (redisKeys: string[]) => unknown,
): Promise<void> {
  const index = `${storePrefix}~lockouts`;
  const leases = `${storePrefix}~leases:`;
  let cursor = '0';
  do {
    const reply = await page(cursor);
    cursor = String(reply[0]);
    const keys: string[] = [];
    for (const k of reply[1]) {
      const text = typeof k === 'string' ? k : Buffer.from(k as Uint8Array).toString();
      if (!text.startsWith(index) && !text.startsWith(leases)) keys.push(text);
    }
    await onKeys(keys);
  } while (cursor !== '0');
}
