import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Tests run against the packages' sources: no build is needed before `npm test`.
const alias = [
  {
    find: /^@portcullis\/core\/testing$/,
    replacement: root('./packages/core/src/testing/index.ts'),
  },
  {
    find: /^@portcullis\/(core|express|koa|fastify|ws|rpc|redis)$/,
    replacement: root('./packages/$1/src/index.ts'),
  },
];

const pkg = (name: string) => ({
  extends: true as const,
  test: { name, include: [`packages/${name}/src/**/*.test.ts`] },
});

export default defineConfig({
  resolve: { alias },
  test: {
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      pkg('core'),
      pkg('express'),
      pkg('koa'),
      pkg('fastify'),
      pkg('ws'),
      pkg('rpc'),
      pkg('redis'),
      { extends: true, test: { name: 'integration', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'examples',
          include: ['examples/*/src/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
        },
      },
    ],
  },
});
