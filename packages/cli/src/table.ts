// Text for a terminal. Keys come off the wire (an Origin header, a forwarded address): shown raw, a
// key could move the cursor, recolour the screen or reorder the line for whoever lists lockouts.

// C0 and C1 controls, DEL, the bidirectional overrides and isolates, and the backslash that
// introduces the escapes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\\]/g;

/** `text` with every character a terminal would act on written as an escape (`\x1b`, `\u202e`). */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    if (c === '\\') return '\\\\';
    const code = c.charCodeAt(0);
    return code < 0x100
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Rows under a header, each column as wide as its widest cell, two spaces apart. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ');
  return [line(header), ...rows.map(line)];
}
