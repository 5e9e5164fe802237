// Durations as operators type them (`90s`, `15m`, `1h30m`) and as the tables show them (`4m 32s`).

const UNITS = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
  ['ms', 1],
] as const;

// Each unit at most once, largest first; `m` and `ms` are told apart by backtracking.
const DURATION = /^(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?(?:(\d{1,9})ms)?$/;

/** What a duration looks like, for usage errors. */
export const DURATION_FORMS = '500ms, 90s, 15m, 1h, 2d, or combined largest first: 1h30m';

/**
 * Milliseconds of a duration such as `500ms`, `90s`, `15m`, `1h`, `2d` or `1h30m`, or `undefined`
 * when `text` is not one (a bare number is not: seconds or milliseconds would be a guess). The
 * range (what a ban accepts) is checked by whoever takes the number.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (match === null || text === '') return undefined;
  let ms = 0;
  UNITS.forEach(([, size], i) => {
    const part = match[i + 1];
    if (part !== undefined) ms += Number(part) * size;
  });
  return ms;
}

/**
 * A time left as people read it: `4m 32s`, `1d 2h`, `500ms` under a second. Whole seconds are
 * rounded up, as `Retry-After` is: a lockout shown as ending in 1s has not ended.
 */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  let left = Math.ceil(ms / 1000) * 1000;
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    if (size < 1000) break;
    const n = Math.floor(left / size);
    left -= n * size;
    if (n > 0) parts.push(`${n}${unit}`);
  }
  return parts.join(' ');
}
