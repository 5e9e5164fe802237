// bench/chart.mjs: the SVG bar charts the benchmarks write (bench/charts/*.svg).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type ChartReport,
  type ChartScenario,
  barChartSvg,
  chartsDir,
  DEFAULT_CHARTS_DIR,
  escapeXml,
  formatValue,
  writeChart,
  writeChartFor,
} from '../../bench/chart.mjs';

const PORTCULLIS_FILL = 'fill="#0969da"';

const core: ChartReport = {
  title: 'bench/core',
  subtitle: 'ns per call ÷ Portcullis',
  scenarios: [
    {
      name: 'hot key, allowed',
      unit: '×',
      higherIsBetter: false,
      rows: [
        { contender: 'bare Map counter', value: 0.28, isPortcullis: false },
        { contender: 'Portcullis', value: 1, isPortcullis: true },
        { contender: 'rate-limiter-flexible', value: 3.23, isPortcullis: false },
      ],
    },
    {
      name: 'heap growth',
      unit: 'MB',
      higherIsBetter: false,
      rows: [
        { contender: 'Portcullis', value: 2.8, isPortcullis: true },
        { contender: 'rate-limiter-flexible', value: 404.8, isPortcullis: false },
      ],
    },
  ],
};

/** The bars: every <rect> that carries a tooltip (the card and the legend carry none). */
function bars(svg: string): { x: number; width: number; portcullis: boolean; title: string }[] {
  return [...svg.matchAll(/<rect ([^>]*)><title>([^<]*)<\/title><\/rect>/g)].map((m) => {
    const attrs = m[1] ?? '';
    const num = (name: string) => Number(new RegExp(` ?${name}="([^"]*)"`).exec(attrs)?.[1]);
    return {
      x: num('x'),
      width: num('width'),
      portcullis: attrs.includes(PORTCULLIS_FILL),
      title: m[2] ?? '',
    };
  });
}

/** What is left after removing every well-formed tag: no `<` or `>` may remain in the text. */
const textOutsideTags = (svg: string) => svg.replace(/<\/?[a-zA-Z][^<>]*>/g, '');

const oneRow = (value: number, unit = '×', contender = 'Portcullis'): ChartReport => ({
  scenarios: [
    { name: 's', unit, higherIsBetter: false, rows: [{ contender, value, isPortcullis: true }] },
  ],
});

describe('barChartSvg', () => {
  it('draws one bar per row, Portcullis in the accent colour, a label on each', () => {
    const svg = barChartSvg(core);
    const drawn = bars(svg);
    expect(drawn).toHaveLength(5);
    expect(drawn.map((b) => b.portcullis)).toEqual([false, true, false, true, false]);
    expect(drawn.map((b) => b.title)).toEqual([
      'bare Map counter: 0.28×',
      'Portcullis: 1.00×',
      'rate-limiter-flexible: 3.23×',
      'Portcullis: 2.80 MB',
      'rate-limiter-flexible: 405 MB',
    ]);
    for (const label of ['0.28×', '1.00×', '3.23×', '2.80 MB', '405 MB'])
      expect(svg).toContain(`>${label}</text>`);
    // In each scenario the largest value spans the plot; the others are in proportion.
    const [map, ours, flexible] = drawn;
    expect(flexible!.width / ours!.width).toBeCloseTo(3.23, 1);
    expect(map!.width / ours!.width).toBeCloseTo(0.28, 1);
  });

  it('is accessible and carries its own background', () => {
    const svg = barChartSvg(core);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg" ')).toBe(true);
    expect(svg).toMatch(/^<svg [^>]*role="img" aria-label="bench\/core"/);
    expect(svg).toContain('<title>bench/core</title>');
    expect(svg).toContain(
      '<desc>ns per call ÷ Portcullis hot key, allowed: bare Map counter 0.28×, Portcullis 1.00×, ' +
        'rate-limiter-flexible 3.23×. heap growth: Portcullis 2.80 MB, rate-limiter-flexible 405 MB.</desc>',
    );
    expect(svg).toMatch(/<rect x="0.5" y="0.5" [^>]*fill="#ffffff"/);
    expect(svg.endsWith('</svg>\n')).toBe(true);
  });

  it('draws the 1× reference line for ratios only', () => {
    const svg = barChartSvg(core);
    // One in the '×' scenario, one in the legend; none in the 'MB' scenario.
    expect(svg.match(/stroke-dasharray/g)).toHaveLength(2);
    const mb = barChartSvg({ scenarios: [core.scenarios[1]!] });
    expect(mb).not.toContain('stroke-dasharray');
    expect(mb).not.toContain('>1×</text>');
  });

  it('escapes every text it writes', () => {
    const nasty = `<script>alert("x")</script> & 'Co' ]]>`;
    const svg = barChartSvg({
      title: nasty,
      subtitle: nasty,
      scenarios: [
        {
          name: nasty,
          unit: '<u>',
          higherIsBetter: true,
          rows: [
            { contender: nasty, value: 1, isPortcullis: true },
            { contender: 'a<b>&c', value: 2, label: '"2" & <more>' },
          ],
        },
      ],
    });
    expect(svg).not.toContain('<script>');
    expect(svg).not.toContain('"x"');
    expect(svg).not.toContain("'Co'");
    expect(svg).not.toContain(']]>');
    expect(textOutsideTags(svg)).not.toMatch(/[<>]/);
    expect(svg).toContain(
      'aria-label="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;Co&#39; ]]&gt;"',
    );
    expect(svg).toContain('>a&lt;b&gt;&amp;c</text>');
    expect(svg).toContain('>&quot;2&quot; &amp; &lt;more&gt;</text>');
    expect(svg).toContain('>1.00 &lt;u&gt;</text>');
  });

  it('replaces characters XML cannot carry', () => {
    expect(escapeXml('a\u0000b\u001bc\td\ne')).toBe('a\uFFFDb\uFFFDc\td\ne');
    expect(escapeXml('\uD800x\uDC00')).toBe('\uFFFDx\uFFFD');
    expect(escapeXml('😀')).toBe('😀');
    expect(barChartSvg(oneRow(1, '×', 'bell\u0007'))).toContain('>bell\uFFFD</text>');
  });

  it('gives the same bytes for the same input', () => {
    const a = barChartSvg(core);
    const b = barChartSvg(structuredClone(core));
    expect(b).toBe(a);
    // Coordinates are rounded to 0.1 px: no float noise such as 0.30000000000000004.
    for (const m of a.matchAll(/ (?:x|y|x1|x2|y1|y2|width|height)="([^"]*)"/g))
      expect(m[1]).toMatch(/^-?\d+(\.\d)?$/);
  });

  it('scales one contender to the full plot and a ratio below 1 against 1×', () => {
    const [full] = bars(barChartSvg(oneRow(5, 'ns')));
    const [half] = bars(barChartSvg(oneRow(0.5)));
    expect(half!.width).toBeCloseTo(full!.width / 2, 0);
  });

  it('draws zero as no bar, and all zeros without dividing by zero', () => {
    for (const unit of ['×', 'ns', '']) {
      const svg = barChartSvg(oneRow(0, unit));
      expect(bars(svg)[0]!.width).toBe(0);
      expect(svg).not.toMatch(/NaN|Infinity/);
    }
    expect(barChartSvg(oneRow(0, ''))).toContain('>0.00</text>');
  });

  it('keeps huge ratios finite and small bars visible', () => {
    const svg = barChartSvg({
      scenarios: [
        {
          name: 'huge',
          unit: '×',
          higherIsBetter: false,
          rows: [
            { contender: 'Portcullis', value: 1, isPortcullis: true },
            { contender: 'slow', value: 1e12 },
          ],
        },
      ],
    });
    const [ours, slow] = bars(svg);
    expect(ours!.width).toBe(2); // the minimum, not a sub-pixel sliver
    expect(slow!.width).toBeGreaterThan(300);
    expect(svg).toContain('>1.00e12×</text>');
    expect(svg).not.toMatch(/NaN|Infinity/);

    const extreme = barChartSvg({
      scenarios: [
        {
          name: 'extreme',
          unit: '',
          higherIsBetter: true,
          rows: [
            { contender: 'max', value: Number.MAX_VALUE },
            { contender: 'min', value: -Number.MAX_VALUE },
          ],
        },
      ],
    });
    expect(extreme).not.toMatch(/NaN|Infinity/);
    const [max, min] = bars(extreme);
    expect(max!.width).toBeCloseTo(min!.width, 0);
  });

  it('draws negative values left of zero', () => {
    const svg = barChartSvg({
      scenarios: [
        {
          name: 'cost',
          unit: '%',
          higherIsBetter: false,
          rows: [
            { contender: 'Portcullis', value: 5, isPortcullis: true },
            { contender: 'empty', value: -5 },
          ],
        },
      ],
    });
    const [pos, neg] = bars(svg);
    expect(neg!.x + neg!.width).toBeCloseTo(pos!.x, 0);
    expect(neg!.width).toBeCloseTo(pos!.width, 0);
    expect(svg).toContain('>\u22125.00 %</text>');
  });

  it('cuts a long name and keeps it whole in the tooltip', () => {
    const long = 'x'.repeat(120);
    const svg = barChartSvg(oneRow(1, '×', long));
    expect(svg).toContain(`<title>${long}: 1.00×</title>`);
    expect(svg).toMatch(/>x+…<\/text>/);
    expect(svg).not.toContain(`>${long}</text>`);
  });

  it.each([
    [Number.NaN, 'NaN'],
    [Number.POSITIVE_INFINITY, 'Infinity'],
    [Number.NEGATIVE_INFINITY, '-Infinity'],
    ['3', '"3"'],
    [undefined, 'undefined'],
    [null, 'null'],
  ])('refuses the value %s with an error that says where', (value, shown) => {
    const report = {
      scenarios: [
        {
          name: 'hot key',
          unit: '×',
          higherIsBetter: false,
          rows: [{ contender: 'x', value }],
        },
      ],
    } as unknown as ChartReport;
    expect(() => barChartSvg(report)).toThrow(TypeError);
    expect(() => barChartSvg(report)).toThrow(
      `bench chart: scenario "hot key", contender "x": value must be a finite number, got ${shown}`,
    );
  });

  it('refuses malformed reports', () => {
    const bad = (report: unknown) => () => barChartSvg(report as ChartReport);
    expect(bad(undefined)).toThrow('bench chart: report: must be an object');
    expect(bad({ scenarios: [] })).toThrow('bench chart: scenarios: must be a non-empty array');
    expect(bad({ scenarios: [{ name: 'a', higherIsBetter: true, rows: [] }] })).toThrow(
      'bench chart: scenario "a": rows must be a non-empty array',
    );
    expect(bad({ scenarios: [{ name: 'a', rows: [{ contender: 'c', value: 1 }] }] })).toThrow(
      'bench chart: scenario "a": higherIsBetter must be a boolean',
    );
    expect(
      bad({
        scenarios: [{ name: 'a', higherIsBetter: true, rows: [{ contender: '', value: 1 }] }],
      }),
    ).toThrow('bench chart: scenario "a", row 0: contender must be a non-empty string');
  });
});

describe('formatValue', () => {
  it.each([
    [0, '×', '0.00×'],
    [-0, '', '0.00'],
    [1, '×', '1.00×'],
    [3.234, '×', '3.23×'],
    [12.34, '%', '12.3 %'],
    [404.8, 'MB', '405 MB'],
    [24_658, 'req/s', '24\u202f658 req/s'],
    [1_000_000, 'ns', '1.00e6 ns'],
    [0.001, '×', '1.00e-3×'],
    [-16.5, '%', '\u221216.5 %'],
  ])('%s %s → %s', (value, unit, text) => {
    expect(formatValue(value, unit)).toBe(text);
  });
});

describe('writeChart and writeChartFor', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const dir = mkdtempSync(join(tmpdir(), 'portcullis-chart-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    vi.restoreAllMocks();
  });
  const scenarios: ChartScenario[] = core.scenarios;

  it('writeChart creates the directory and writes the SVG', () => {
    const path = join(tmp(), 'nested', 'a.svg');
    expect(writeChart(path, core)).toBe(path);
    expect(readFileSync(path, 'utf8')).toBe(barChartSvg(core));
  });

  it('BENCH_CHARTS: unset or empty → bench/charts, 0 → none, a directory → there', () => {
    expect(chartsDir({})).toBe(DEFAULT_CHARTS_DIR);
    expect(chartsDir({ BENCH_CHARTS: '' })).toBe(DEFAULT_CHARTS_DIR);
    expect(DEFAULT_CHARTS_DIR.replace(/\\/g, '/')).toMatch(/\/bench\/charts\/?$/);
    expect(chartsDir({ BENCH_CHARTS: '0' })).toBeUndefined();
    const dir = tmp();
    expect(chartsDir({ BENCH_CHARTS: dir })).toBe(dir);
  });

  it('writes <dir>/<bench>.svg with the given title, or nothing with BENCH_CHARTS=0', () => {
    vi.spyOn(console, 'log').mockImplementation(() => {});
    const dir = tmp();
    const path = writeChartFor('ws', scenarios, {
      title: 'bench/ws',
      subtitle: 'sub',
      env: { BENCH_CHARTS: dir },
    });
    expect(path).toBe(join(dir, 'ws.svg'));
    expect(readFileSync(join(dir, 'ws.svg'), 'utf8')).toBe(
      barChartSvg({ title: 'bench/ws', subtitle: 'sub', scenarios }),
    );
    expect(writeChartFor('ws', scenarios, { env: { BENCH_CHARTS: '0' } })).toBeUndefined();
  });

  it('refuses a bench name that is not a plain file name, and bad data before writing', () => {
    const dir = tmp();
    const env = { BENCH_CHARTS: dir };
    expect(() => writeChartFor('../x', scenarios, { env })).toThrow(/benchName/);
    expect(() => writeChartFor('Core', scenarios, { env })).toThrow(/benchName/);
    const nan = [{ ...scenarios[0]!, rows: [{ contender: 'x', value: Number.NaN }] }];
    expect(() => writeChartFor('core', nan, { env })).toThrow(/finite number, got NaN/);
    expect(() => readFileSync(join(dir, 'core.svg'))).toThrow();
  });
});
