import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['90s', 90_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['2d', 172_800_000],
    ['1h30m', 5_400_000],
    ['1d2h3m4s5ms', 93_784_005],
    ['0s', 0],
    ['24d20h31m23s647ms', 2_147_483_647],
  ])('%s is %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    '',
    '90',
    '1.5h',
    '-1s',
    '15x',
    '1w',
    '30m1h',
    '1h1h',
    ' 1h',
    '1h ',
    '1H',
    'ms',
    '1234567890s',
  ])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [1, '1ms'],
    [999, '999ms'],
    [1000, '1s'],
    [1001, '2s'],
    [90_000, '1m 30s'],
    [272_000, '4m 32s'],
    [271_001, '4m 32s'],
    [3_600_000, '1h'],
    [3_599_001, '1h'],
    [3_661_000, '1h 1m 1s'],
    [93_784_005, '1d 2h 3m 5s'],
    [2_147_483_647, '24d 20h 31m 24s'],
  ])('%i ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
