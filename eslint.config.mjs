// Type-aware lint for one rule biome cannot check: no floating promises. The API promises that
// no rejection is left unhandled, so every promise in the packages, the tests and the examples is
// awaited, returned, handled with .catch, or marked `void` with a comment saying why it may run
// on alone. Biome stays the linter for everything else (`npm run lint` runs both).
import tseslint from 'typescript-eslint';

export default [
  { ignores: ['**/dist/**', '**/.tsbuild/**', '**/node_modules/**', 'tarballs/**'] },
  {
    files: [
      'packages/*/src/**/*.ts',
      'test/**/*.ts',
      'examples/*/src/**/*.{js,mjs,ts}',
      'examples/*/test/**/*.{js,mjs,ts}',
    ],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
];
