// bench/core/login.mjs --instructions runs each contender as a `--count` job under valgrind. The
// jobs themselves are checked here without valgrind (the count is the bench's, not a test's):
// every one makes its passes and still gets the answer its scenario expects, and a job the bench
// does not know fails loudly instead of counting nothing.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function countJob(spec: string): { status: number | null; stderr: string } {
  const run = spawnSync(
    process.execPath,
    ['--single-threaded', 'bench/core/login.mjs', `--count=${spec}`],
    { cwd: root, encoding: 'utf8' },
  );
  return { status: run.status, stderr: run.stderr };
}

describe('bench/core/login.mjs count jobs (the --instructions mode)', () => {
  it.each(['failure:0:1', 'failure:1:1', 'failure:2:1', 'failure:3:1', 'success:1:1'])(
    '%s makes its passes and answers as its scenario expects',
    (spec) => {
      expect(countJob(spec)).toEqual({ status: 0, stderr: '' });
    },
  );

  it('a job it does not know fails with its name', () => {
    const run = countJob('failure:9:1');
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('bench/core/login: no count job failure:9:1');
  });
});
