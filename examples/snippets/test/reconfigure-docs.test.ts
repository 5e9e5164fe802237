// The READMEs once said the mounted middleware had no `reconfigure` while every adapter hung one on
// it (Express, Koa, Fastify's hooks, ws). These checks keep the docs and the code saying the same:
// no README denies it, and each adapter's "Live reconfiguration" snippet (run and compared with its
// README by snippets.test.ts) calls it on the middleware it mounted.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const read = (path: string) => readFileSync(`${REPO}/${path}`, 'utf8');

/** Sentences that deny the middleware its `reconfigure` or its handle. */
const DENIALS = /(?:has|have) no\s+`reconfigure`|returns no handle/g;

describe('the docs say the mounted middleware has reconfigure, as the code does', () => {
  it.each(['core', 'express', 'koa', 'fastify', 'hono', 'fetch', 'ws'])(
    'packages/%s/README.md never says the middleware has no reconfigure',
    (pkg) => {
      expect(read(`packages/${pkg}/README.md`).match(DENIALS)).toBeNull();
    },
  );

  it.each([
    ['express-reconfigure.mjs', ['limitApi.reconfigure({ limit: 2 })', 'guardLogin.reconfigure(']],
    ['koa-reconfigure.mjs', ['limitApi.reconfigure({ limit: 2 })', 'guardLogin.reconfigure(']],
    ['fastify-reconfigure.mjs', ['guardLogin.reconfigure(']],
    ['hono-reconfigure.mjs', ['limitApi.reconfigure({ limit: 2 })', 'guardLogin.reconfigure(']],
    ['fetch-reconfigure.mjs', ['limitApi.reconfigure({ limit: 2 })', 'guardLogin.reconfigure(']],
    ['ws-reconfigure.mjs', ['const guard = guardUpgrade(', 'guard.reconfigure(']],
  ])('%s reconfigures the middleware it mounted', (file, calls) => {
    const code = read(`examples/snippets/${file}`);
    expect(calls.filter((call) => !code.includes(call))).toEqual([]);
  });
});
