// Spawning the built `portcullis` binary the way a shell does (node dist/esm/bin.js), and reading
// its tables back. Shared by cli.test.ts and test/redis-cluster/cli.test.ts.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The binary package.json's `bin` names, as built by the test setup (scripts/build-if-stale.mjs). */
export const BIN = fileURLToPath(new URL('../dist/esm/bin.js', import.meta.url));

/** What one run printed, line by line, and how it exited. */
export interface Ran {
  code: number | null;
  stdout: string[];
  stderr: string[];
}

const lines = (text: string): string[] => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));

/** Runs `portcullis ...args` (without PORTCULLIS_REDIS_URL from this environment). */
export function portcullis(...args: string[]): Promise<Ran> {
  if (!existsSync(BIN))
    throw new Error(
      `${BIN} is missing: the cli package did not build (npm run build -w packages/cli)`,
    );
  const env = { ...process.env };
  delete env['PORTCULLIS_REDIS_URL'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: lines(stdout), stderr: lines(stderr) });
    });
  });
}

/** A loopback port nothing listens on (bound, then closed). */
export function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/** The cells of a table line (the columns are two or more spaces apart; no cell holds two). */
export const cells = (line: string): string[] => line.split(/ {2,}/);

/** Seconds of an ENDS IN cell (`1d 2h 3m 4s`; `500ms` is 0.5). */
export function secondsOf(text: string): number {
  const ms = /^(\d+)ms$/.exec(text);
  if (ms) return Number(ms[1]) / 1000;
  const size: Record<string, number> = { d: 86_400, h: 3_600, m: 60, s: 1 };
  let total = 0;
  for (const part of text.split(' ')) {
    const m = /^(\d+)([dhms])$/.exec(part);
    if (!m) throw new Error(`not a time left: ${text}`);
    total += Number(m[1]) * (size[m[2] as string] as number);
  }
  return total;
}

/** The table a reader expects: every column but the last padded to its widest cell, two spaces. */
export function expectedTable(rows: string[][]): string[] {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] as number))).join('  '),
  );
}
