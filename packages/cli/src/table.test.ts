import { describe, expect, it } from 'vitest';
import { printable, table } from './table.js';

describe('printable', () => {
  it('escapes what a terminal would act on, and nothing else', () => {
    expect(printable('browser-origin:https://app.example')).toBe(
      'browser-origin:https://app.example',
    );
    expect(printable('2001:db8::/64 é 中')).toBe('2001:db8::/64 é 中');
    expect(printable('\u001b[2Jevil\r\n')).toBe('\\x1b[2Jevil\\x0d\\x0a');
    expect(printable('a\u202ecba\u2066\u009b\u007f')).toBe('a\\u202ecba\\u2066\\x9b\\x7f');
    expect(printable('back\\slash')).toBe('back\\\\slash');
  });
});

describe('table', () => {
  it('pads every column but the last to its widest cell, two spaces apart', () => {
    expect(
      table(
        ['A', 'BB', 'C'],
        [
          ['xxx', 'y', 'z'],
          ['', 'yyyy', 'long last cell'],
        ],
      ),
    ).toEqual(['A    BB    C', 'xxx  y     z', '     yyyy  long last cell']);
  });
});
