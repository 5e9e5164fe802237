// SVG bar charts of benchmark results, without dependencies. Every benchmark hands its results
// over in one shape and gets one chart (bench/charts/<bench>.svg), which bench/README.md embeds:
//
//   { scenarios: [{ name, unit, higherIsBetter, rows: [{ contender, value, isPortcullis }] }] }
//
// - one group of horizontal bars per scenario, one bar per row, in the order given; Portcullis's
//   rows in the accent colour; a value label on every bar;
// - scenarios whose unit is '×' are ratios: a dashed reference line marks 1×;
// - each scenario has its own linear scale from 0 (or its most negative value) to its largest
//   value (and 1 for ratios), so a huge ratio never squeezes another scenario's bars; a non-zero
//   bar is never thinner than MIN_BAR px;
// - an explicit white card, so it reads the same on GitHub's light and dark themes;
// - role="img", aria-label, <title> and a <desc> that lists every value, for screen readers;
// - every text is escaped (and characters XML cannot carry are replaced), every number is
//   rounded: the same input always gives the same bytes, so a chart's diff is the results' diff.
//
// A bench script calls writeChartFor('core', scenarios, { title, subtitle }) at its end, after
// writing its JSON report. BENCH_CHARTS picks the directory (default bench/charts); BENCH_CHARTS=0
// writes no chart.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where charts go when BENCH_CHARTS is not set: bench/charts beside this file. */
export const DEFAULT_CHARTS_DIR = fileURLToPath(new URL('./charts/', import.meta.url));

const WIDTH = 760;
const PAD = 16;
const FONT = 'system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif';
const TITLE_SIZE = 16;
const TEXT_SIZE = 12;
const SMALL_SIZE = 11;
/** Average glyph width as a share of the font size: an estimate, for layout only. */
const GLYPH = 0.6;
const BAR = 16;
const BAR_GAP = 5;
const GROUP_HEAD = 22;
const GROUP_GAP = 14;
const VALUE_ROOM = 70;
const MIN_BAR = 2;
const MIN_LABEL_COLUMN = 110;
const MAX_LABEL_COLUMN = 310;

const COLORS = {
  background: '#ffffff',
  border: '#d0d7de',
  text: '#1f2328',
  muted: '#59636e',
  portcullis: '#0969da',
  other: '#afb8c1',
  reference: '#cf222e',
  axis: '#8c959f',
};

/**
 * Text as XML character data or attribute value: `& < > " '` escaped, and characters XML 1.0
 * cannot carry at all (C0 controls other than tab and newline, lone surrogates, U+FFFE/U+FFFF)
 * replaced by U+FFFD.
 * @param {unknown} text
 */
export function escapeXml(text) {
  return String(text)
    .replace(
      // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters removed
      /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
      '\uFFFD',
    )
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A coordinate rounded to 0.1 px, without "-0" or float noise. */
function px(x) {
  const r = Math.round(x * 10) / 10;
  return String(r === 0 ? 0 : r);
}

/** Digits in groups of three, separated by a narrow no-break space (as in the README tables). */
function group(digits) {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, '\u202f');
}

/**
 * A value as shown on its bar: 2 decimals under 10, 1 under 100, none up to a million, then
 * scientific notation; the unit after it ('×' and '%' as in the README: "3.23×", "5.2 %").
 * @param {number} value
 * @param {string} unit
 */
export function formatValue(value, unit) {
  const abs = Math.abs(value);
  let text;
  if (abs !== 0 && (abs >= 1e6 || abs < 0.005)) {
    text = value.toExponential(2).replace('e+', 'e');
  } else {
    const decimals = abs < 10 ? 2 : abs < 100 ? 1 : 0;
    text = value.toFixed(decimals);
    if (/^-0(\.0*)?$/.test(text)) text = text.slice(1);
    const [whole, fraction] = text.split('.');
    text = group(whole) + (fraction === undefined ? '' : `.${fraction}`);
  }
  text = text.replace(/^-/, '\u2212');
  if (unit === '' || unit === undefined) return text;
  if (unit === '×') return `${text}×`;
  return `${text} ${unit}`;
}

const isRatio = (unit) => unit === '×';

/** Throws a TypeError naming where the input is wrong; returns the normalised report. */
function validate(report) {
  const fail = (where, what) => {
    throw new TypeError(`bench chart: ${where}: ${what}`);
  };
  if (report === null || typeof report !== 'object') fail('report', 'must be an object');
  const { title, subtitle, scenarios } = report;
  if (title !== undefined && typeof title !== 'string') fail('title', 'must be a string');
  if (subtitle !== undefined && typeof subtitle !== 'string') fail('subtitle', 'must be a string');
  if (!Array.isArray(scenarios) || scenarios.length === 0)
    fail('scenarios', 'must be a non-empty array');
  return {
    title: title ?? 'Benchmark',
    subtitle: subtitle ?? '',
    scenarios: scenarios.map((s, i) => {
      const at = `scenario ${i}`;
      if (s === null || typeof s !== 'object') fail(at, 'must be an object');
      if (typeof s.name !== 'string' || s.name === '') fail(at, 'name must be a non-empty string');
      const where = `scenario "${s.name}"`;
      if (s.unit !== undefined && typeof s.unit !== 'string') fail(where, 'unit must be a string');
      if (typeof s.higherIsBetter !== 'boolean') fail(where, 'higherIsBetter must be a boolean');
      if (!Array.isArray(s.rows) || s.rows.length === 0)
        fail(where, 'rows must be a non-empty array');
      return {
        name: s.name,
        unit: s.unit ?? '',
        higherIsBetter: s.higherIsBetter,
        rows: s.rows.map((r, j) => {
          if (r === null || typeof r !== 'object') fail(`${where}, row ${j}`, 'must be an object');
          if (typeof r.contender !== 'string' || r.contender === '')
            fail(`${where}, row ${j}`, 'contender must be a non-empty string');
          const at = `${where}, contender "${r.contender}"`;
          if (typeof r.value !== 'number' || !Number.isFinite(r.value))
            fail(
              at,
              `value must be a finite number, got ${typeof r.value === 'number' ? r.value : (JSON.stringify(r.value) ?? String(r.value))}`,
            );
          if (r.isPortcullis !== undefined && typeof r.isPortcullis !== 'boolean')
            fail(at, 'isPortcullis must be a boolean');
          if (r.label !== undefined && typeof r.label !== 'string')
            fail(at, 'label must be a string');
          return {
            contender: r.contender,
            value: r.value,
            isPortcullis: r.isPortcullis === true,
            label: r.label ?? formatValue(r.value, s.unit ?? ''),
          };
        }),
      };
    }),
  };
}

/** Splits `text` into lines of at most `max` characters at spaces (a longer word stays whole). */
function wrap(text, max) {
  const lines = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== '' && line.length + 1 + word.length > max) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** `text` cut to `max` characters with an ellipsis (whole code points). */
function truncate(text, max) {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, Math.max(1, max - 1)).join('')}…`;
}

const textWidth = (text, size) => Array.from(text).length * size * GLYPH;

/**
 * The chart as an SVG document (a string ending in a newline).
 * @param {{ title?: string, subtitle?: string, scenarios: Array<{ name: string, unit?: string,
 *   higherIsBetter: boolean, rows: Array<{ contender: string, value: number,
 *   isPortcullis?: boolean, label?: string }> }> }} report
 * @returns {string}
 */
export function barChartSvg(report) {
  const { title, subtitle, scenarios } = validate(report);
  const out = [];
  const inner = WIDTH - 2 * PAD;

  // Name column: as wide as the longest name needs, within bounds; longer names are cut (the
  // whole name stays in the bar's tooltip and in <desc>).
  const longest = Math.max(
    ...scenarios.flatMap((s) => s.rows.map((r) => textWidth(r.contender, TEXT_SIZE))),
  );
  const labelColumn = Math.min(MAX_LABEL_COLUMN, Math.max(MIN_LABEL_COLUMN, Math.ceil(longest)));
  const nameChars = Math.floor(labelColumn / (TEXT_SIZE * GLYPH));
  const x0 = PAD + labelColumn + 8;
  const plotWidth = WIDTH - PAD - VALUE_ROOM - x0;

  let y = PAD;
  const titleLines = wrap(title, Math.floor(inner / (TITLE_SIZE * GLYPH)));
  for (const line of titleLines) {
    y += TITLE_SIZE + 4;
    out.push(
      `<text x="${PAD}" y="${px(y)}" font-size="${TITLE_SIZE}" font-weight="600" fill="${COLORS.text}">${escapeXml(line)}</text>`,
    );
  }
  for (const line of wrap(subtitle, Math.floor(inner / (SMALL_SIZE * GLYPH)))) {
    y += SMALL_SIZE + 4;
    out.push(
      `<text x="${PAD}" y="${px(y)}" font-size="${SMALL_SIZE}" fill="${COLORS.muted}">${escapeXml(line)}</text>`,
    );
  }
  y += 8;

  const summary = [];
  for (const s of scenarios) {
    const values = s.rows.map((r) => r.value);
    const ratio = isRatio(s.unit);
    let lo = Math.min(0, ...values);
    let hi = Math.max(0, ...values, ratio ? 1 : 0);
    if (hi === lo) hi = lo + 1; // every value 0
    // Very large magnitudes: scale from a normalised range so (v - lo) / (hi - lo) stays finite.
    const span = hi - lo;
    if (!Number.isFinite(span)) {
      lo /= 4;
      hi /= 4;
    }
    const scale = Number.isFinite(span) ? 1 : 4;
    const at = (v) => x0 + ((v / scale - lo) / (hi - lo)) * plotWidth;
    const zero = at(0);

    y += GROUP_HEAD;
    const better = s.higherIsBetter ? 'longer is better' : 'shorter is better';
    out.push(
      `<text x="${PAD}" y="${px(y - 7)}" font-size="${TEXT_SIZE}" font-weight="600" fill="${COLORS.text}">${escapeXml(s.name)}<tspan dx="5" font-weight="400" fill="${COLORS.muted}">(${better})</tspan></text>`,
    );
    const top = y;
    const bottom = top + s.rows.length * (BAR + BAR_GAP) - BAR_GAP;
    // Axis and reference line first: bars and labels are drawn over them.
    out.push(
      `<line x1="${px(zero)}" y1="${px(top - 2)}" x2="${px(zero)}" y2="${px(bottom + 2)}" stroke="${COLORS.axis}" stroke-width="1"/>`,
    );
    if (ratio) {
      const one = px(at(1));
      out.push(
        `<line x1="${one}" y1="${px(top - 3)}" x2="${one}" y2="${px(bottom + 3)}" stroke="${COLORS.reference}" stroke-width="1.5" stroke-dasharray="4 3"/>`,
      );
    }
    for (const r of s.rows) {
      const end = at(r.value);
      let left = Math.min(zero, end);
      let width = Math.abs(end - zero);
      if (r.value !== 0 && width < MIN_BAR) {
        width = MIN_BAR;
        if (r.value < 0) left = zero - MIN_BAR;
      }
      const fill = r.isPortcullis ? COLORS.portcullis : COLORS.other;
      const weight = r.isPortcullis ? ' font-weight="600"' : '';
      const mid = y + BAR / 2 + TEXT_SIZE * 0.35;
      out.push(
        `<text x="${PAD + labelColumn}" y="${px(mid)}" font-size="${TEXT_SIZE}" text-anchor="end" fill="${COLORS.text}"${weight}>${escapeXml(truncate(r.contender, nameChars))}</text>`,
      );
      out.push(
        `<rect x="${px(left)}" y="${px(y)}" width="${px(width)}" height="${BAR}" rx="2" fill="${fill}"><title>${escapeXml(`${r.contender}: ${r.label}`)}</title></rect>`,
      );
      // The value after the bar's end; inside it when it would leave the card.
      const labelRight = Math.max(left + width, zero) + 4;
      const fits = labelRight + textWidth(r.label, SMALL_SIZE) <= WIDTH - PAD;
      const inside = !fits && width > textWidth(r.label, SMALL_SIZE) + 8;
      const labelColor = inside ? (r.isPortcullis ? '#ffffff' : COLORS.text) : COLORS.text;
      out.push(
        inside
          ? `<text x="${px(left + width - 4)}" y="${px(mid)}" font-size="${SMALL_SIZE}" text-anchor="end" fill="${labelColor}"${weight}>${escapeXml(r.label)}</text>`
          : // On a patch of background, so a reference line behind it does not cross it.
            `<rect x="${px(labelRight - 2)}" y="${px(y + 1)}" width="${px(textWidth(r.label, SMALL_SIZE) + 4)}" height="${BAR - 2}" fill="${COLORS.background}"/><text x="${px(labelRight)}" y="${px(mid)}" font-size="${SMALL_SIZE}" fill="${labelColor}"${weight}>${escapeXml(r.label)}</text>`,
      );
      y += BAR + BAR_GAP;
    }
    y += GROUP_GAP - BAR_GAP;
    summary.push(`${s.name}: ${s.rows.map((r) => `${r.contender} ${r.label}`).join(', ')}.`);
  }

  // Legend.
  y += 4;
  const legend = [];
  legend.push(
    `<rect x="${PAD}" y="${px(y)}" width="12" height="12" rx="2" fill="${COLORS.portcullis}"/>`,
  );
  legend.push(
    `<text x="${PAD + 18}" y="${px(y + 10)}" font-size="${SMALL_SIZE}" fill="${COLORS.text}">Portcullis</text>`,
  );
  legend.push(
    `<rect x="${PAD + 90}" y="${px(y)}" width="12" height="12" rx="2" fill="${COLORS.other}"/>`,
  );
  legend.push(
    `<text x="${PAD + 108}" y="${px(y + 10)}" font-size="${SMALL_SIZE}" fill="${COLORS.text}">others</text>`,
  );
  if (scenarios.some((s) => isRatio(s.unit))) {
    legend.push(
      `<line x1="${PAD + 170}" y1="${px(y - 1)}" x2="${PAD + 170}" y2="${px(y + 13)}" stroke="${COLORS.reference}" stroke-width="1.5" stroke-dasharray="4 3"/>`,
    );
    legend.push(
      `<text x="${PAD + 178}" y="${px(y + 10)}" font-size="${SMALL_SIZE}" fill="${COLORS.text}">1×</text>`,
    );
  }
  out.push(...legend);
  y += 12 + PAD;

  const height = Math.ceil(y);
  return `${[
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escapeXml(title)}" font-family="${escapeXml(FONT)}">`,
    `<title>${escapeXml(title)}</title>`,
    `<desc>${escapeXml([subtitle, ...summary].filter(Boolean).join(' '))}</desc>`,
    `<rect x="0.5" y="0.5" width="${WIDTH - 1}" height="${height - 1}" rx="6" fill="${COLORS.background}" stroke="${COLORS.border}"/>`,
    ...out,
    '</svg>',
  ].join('\n')}\n`;
}

/**
 * Writes the chart of `report` to `path` (creating its directory) and returns `path`.
 * @param {string} path
 * @param {Parameters<typeof barChartSvg>[0]} report
 */
export function writeChart(path, report) {
  const svg = barChartSvg(report);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, svg);
  return path;
}

/**
 * The directory BENCH_CHARTS names (relative to the working directory), DEFAULT_CHARTS_DIR when
 * it is unset or empty, or undefined when it is `0` (no charts).
 * @param {Record<string, string | undefined>} [env]
 */
export function chartsDir(env = process.env) {
  const value = env.BENCH_CHARTS;
  if (value === undefined || value === '') return DEFAULT_CHARTS_DIR;
  if (value === '0') return undefined;
  return resolve(value);
}

/**
 * What a bench script calls at its end: writes `<BENCH_CHARTS>/<benchName>.svg` (default
 * bench/charts/<benchName>.svg), prints where, and returns the path; writes nothing and returns
 * undefined when BENCH_CHARTS=0. Throws (before writing) on malformed scenarios, so write the
 * JSON report first.
 * @param {string} benchName lower-case letters, digits and dashes: `core`, `http`, `redis`, `ws`
 * @param {Parameters<typeof barChartSvg>[0]['scenarios']} scenarios
 * @param {{ title?: string, subtitle?: string, env?: Record<string, string | undefined> }} [options]
 * @returns {string | undefined}
 */
export function writeChartFor(benchName, scenarios, options = {}) {
  if (typeof benchName !== 'string' || !/^[a-z0-9][a-z0-9-]*$/.test(benchName))
    throw new TypeError(
      `bench chart: benchName must be lower-case letters, digits and dashes, got ${JSON.stringify(benchName)}`,
    );
  const svg = barChartSvg({
    title: options.title ?? `Portcullis: bench/${benchName}`,
    ...(options.subtitle !== undefined && { subtitle: options.subtitle }),
    scenarios,
  });
  const dir = chartsDir(options.env ?? process.env);
  if (dir === undefined) return undefined;
  const path = join(dir, `${benchName}.svg`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path, svg);
  console.log(`chart: ${path}`);
  return path;
}
