// Types of bench/chart.mjs, for the test that imports it (test/bench/chart.test.ts).

/** One bar: a contender's value in one scenario. */
export interface ChartRow {
  contender: string;
  /** A finite number (NaN and ±Infinity are refused). */
  value: number;
  /** Drawn in the accent colour. */
  isPortcullis?: boolean;
  /** The text on the bar; default: the value formatted with the scenario's unit. */
  label?: string;
}

/** One group of bars. */
export interface ChartScenario {
  name: string;
  /** '×' marks ratios (a reference line at 1×); '%', 'MB', 'ns', … are shown after the value. */
  unit?: string;
  higherIsBetter: boolean;
  rows: ChartRow[];
}

export interface ChartReport {
  title?: string;
  subtitle?: string;
  scenarios: ChartScenario[];
}

export const DEFAULT_CHARTS_DIR: string;
export function escapeXml(text: unknown): string;
export function formatValue(value: number, unit: string): string;
export function barChartSvg(report: ChartReport): string;
export function writeChart(path: string, report: ChartReport): string;
export function chartsDir(env?: Record<string, string | undefined>): string | undefined;
export function writeChartFor(
  benchName: string,
  scenarios: ChartScenario[],
  options?: {
    title?: string;
    subtitle?: string;
    env?: Record<string, string | undefined>;
  },
): string | undefined;
