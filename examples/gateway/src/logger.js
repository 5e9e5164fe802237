// A tiny structured logger: one JSON object per line, pino-compatible call shape
// (`warn(obj, msg)`), so core's limiters can log a lockout straight into it.

/** @typedef {'debug' | 'info' | 'warn' | 'error'} Level */

/**
 * @typedef {object} JsonLogger
 * @property {(obj: object, msg?: string) => void} debug
 * @property {(obj: object, msg?: string) => void} info
 * @property {(obj: object, msg?: string) => void} warn
 * @property {(obj: object, msg?: string) => void} error
 */

/** @type {Record<Level, number>} */
const RANK = { debug: 20, info: 30, warn: 40, error: 50 };

/**
 * Makes `value` JSON-friendly: errors become `{ type, message, code?, stack }`.
 * @param {string} _key
 * @param {unknown} value
 */
function replacer(_key, value) {
  if (value instanceof Error) {
    const code = /** @type {{ code?: unknown }} */ (value).code;
    return {
      type: value.name,
      message: value.message,
      ...(code !== undefined && { code }),
      stack: value.stack,
    };
  }
  if (typeof value === 'bigint') return String(value);
  return value;
}

/**
 * Creates a logger writing `{"time":…,"level":"warn","msg":…,…fields}` lines.
 * @param {{
 *   write?: (line: string) => void,
 *   level?: Level,
 *   clock?: { now(): number },
 * }} [options] `write` defaults to stdout; `level` (default `info`) drops anything below it
 * @returns {JsonLogger}
 */
export function createJsonLogger(options = {}) {
  const write = options.write ?? ((line) => process.stdout.write(line));
  const min = RANK[options.level ?? 'info'];
  const clock = options.clock ?? { now: () => Date.now() };

  /** @param {Level} level */
  function method(level) {
    /**
     * @param {object} obj
     * @param {string} [msg]
     */
    return function log(obj, msg) {
      if (RANK[level] < min) return;
      const fields = obj instanceof Error ? { err: obj } : obj;
      const entry = {
        time: new Date(clock.now()).toISOString(),
        level,
        ...(msg !== undefined && { msg }),
        ...fields,
      };
      write(`${JSON.stringify(entry, replacer)}\n`);
    };
  }

  return {
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
  };
}

/**
 * A logger that keeps its lines in memory (tests and the in-process demo read them back).
 * @param {{ clock?: { now(): number }, level?: Level, echo?: (line: string) => void }} [options]
 * @returns {JsonLogger & { lines: string[], entries(): Record<string, unknown>[] }}
 */
export function createMemoryLogger(options = {}) {
  /** @type {string[]} */
  const lines = [];
  const logger = createJsonLogger({
    ...(options.clock !== undefined && { clock: options.clock }),
    level: options.level ?? 'debug',
    write: (line) => {
      lines.push(line);
      options.echo?.(line);
    },
  });
  return {
    ...logger,
    lines,
    entries: () => lines.map((line) => JSON.parse(line)),
  };
}
