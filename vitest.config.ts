import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Tests import the packages' sources (the aliases below): no build is needed before `npm test`.
// The projects that pack the packages or start server processes loading their dist, or that need
// Redis, run test/setup/services.ts first: it builds what is stale and brings up a Redis.
const alias = [
  {
    find: /^@portcullis\/core\/testing$/,
    replacement: root('./packages/core/src/testing/index.ts'),
  },
  {
    find: /^@portcullis\/core\/adapter$/,
    replacement: root('./packages/core/src/adapter.ts'),
  },
  {
    find: /^@portcullis\/(core|express|koa|fastify|hono|fetch|ws|rpc|redis|otel|cli)$/,
    replacement: root('./packages/$1/src/index.ts'),
  },
];

const services = [root('./test/setup/services.ts')];

const pkg = (name: string, globalSetup: string[] = []) => ({
  extends: true as const,
  test: { name, include: [`packages/${name}/src/**/*.test.ts`], globalSetup },
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
      pkg('hono'),
      pkg('fetch'),
      pkg('ws'),
      pkg('rpc'),
      pkg('redis', services),
      pkg('otel'),
      pkg('cli', services),
      {
        extends: true,
        test: { name: 'integration', include: ['test/**/*.test.ts'], globalSetup: services },
      },
      {
        extends: true,
        test: {
          name: 'examples',
          include: ['examples/*/src/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
          globalSetup: services,
        },
      },
    ],
  },
});
