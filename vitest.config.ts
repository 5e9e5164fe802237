import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { PACKAGES } from './scripts/workspaces.mjs';

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
    find: new RegExp(`^@portcullis/(${PACKAGES.join('|')})$`),
    replacement: root('./packages/$1/src/index.ts'),
  },
];

const services = [root('./test/setup/services.ts')];
/** The packages whose unit tests need a Redis or built packages (test/setup/services.ts). */
const WITH_SERVICES = new Set(['redis', 'cli']);

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
      ...PACKAGES.map((name) => pkg(name, WITH_SERVICES.has(name) ? services : [])),
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
