// What @portcullis/core publishes, read from the dist the test setup built: the `@internal`
// members stay out of every declaration file (the build strips them), and the built entries, ESM
// and CommonJS, export exactly what their sources do.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as adapterSource from '@portcullis/core/adapter';
import * as rootSource from '@portcullis/core';
import { describe, expect, it } from 'vitest';

const dist = fileURLToPath(new URL('../../packages/core/dist', import.meta.url));

function declarations(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** The names marked `@internal` in core's sources: for core's own code only. */
const INTERNAL = [
  'failureTable',
  'FailureTable',
  'sibling()',
  'compileClientRules',
  'POLICY_MEMBER',
  'KeyIndex',
  'SlotPool',
];

describe('@portcullis/core as built', () => {
  it('no declaration file names an @internal member', () => {
    const files = declarations(dist);
    expect(files.length).toBeGreaterThan(40);
    const leaks = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return INTERNAL.filter((name) => text.includes(name)).map(
        (name) => `${file.slice(dist.length + 1)}: ${name}`,
      );
    });
    expect(leaks).toEqual([]);
    // The members around them are still declared: only the internal ones went.
    const store = readFileSync(join(dist, 'esm/memory-store.d.ts'), 'utf8');
    expect(store).toContain('protectedKeys(');
  });

  it('the built entries export what their sources do, ESM and CommonJS alike', async () => {
    const require = createRequire(import.meta.url);
    for (const [entry, source] of [
      ['index', rootSource],
      ['adapter', adapterSource],
    ] as const) {
      const expected = Object.keys(source).sort();
      const esm = await import(pathToFileURL(join(dist, `esm/${entry}.js`)).href);
      const cjs = require(join(dist, `cjs/${entry}.js`));
      expect([entry, Object.keys(esm).sort()]).toEqual([entry, expected]);
      expect([entry, Object.keys(cjs).sort()]).toEqual([entry, expected]);
    }
  });
});
