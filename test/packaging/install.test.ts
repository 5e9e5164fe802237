// Packs every publishable package with `npm pack`, installs the tarballs into a scratch project
// outside the repository (with the frameworks at the repository's exact versions), then loads them
// the four ways users do: ESM and CommonJS, JavaScript and TypeScript (compiled and run, with the
// repository's tsc, `module: node16` and `nodenext`, strict). Every variant runs the same program
// — the public names (docs/design.md#public-names) and one real call into each package — and must
// print the same report. scripts/pack.mjs builds whatever is stale first (the test setup already
// has), so the tarballs always hold a dist built from the sources under test.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGES = [
  'core',
  'express',
  'koa',
  'fastify',
  'hono',
  'fetch',
  'ws',
  'rpc',
  'redis',
  'otel',
  'cli',
] as const;

/** The exact version of `dependency` the repository tests with (a devDependency of `where`). */
function repoVersion(where: string, dependency: string): string {
  const manifest = JSON.parse(readFileSync(join(repo, where, 'package.json'), 'utf8'));
  const version = manifest.devDependencies?.[dependency];
  if (typeof version !== 'string' || !/^\d+\.\d+\.\d+$/.test(version))
    throw new Error(`${where}/package.json has no exact devDependency on ${dependency}`);
  return version;
}

const PEERS: Record<string, string> = {
  express: repoVersion('packages/express', 'express'),
  '@types/express': repoVersion('packages/express', '@types/express'),
  koa: repoVersion('packages/koa', 'koa'),
  '@types/koa': repoVersion('packages/koa', '@types/koa'),
  fastify: repoVersion('packages/fastify', 'fastify'),
  hono: repoVersion('packages/hono', 'hono'),
  ws: repoVersion('packages/ws', 'ws'),
  '@types/ws': repoVersion('packages/ws', '@types/ws'),
  ioredis: repoVersion('packages/redis', 'ioredis'),
  '@opentelemetry/api': repoVersion('packages/otel', '@opentelemetry/api'),
  '@types/node': repoVersion('.', '@types/node'),
};

// ---------------------------------------------------------------------------------------------
// The program every variant runs. Imports are written per module system; the body is valid
// JavaScript and strict TypeScript alike.

interface Import {
  from: string;
  /** Named imports: `name` or `[exported, local]`. */
  names?: (string | [string, string])[];
  /** The local name of the default import. */
  default?: string;
  /** How CommonJS JavaScript gets the default: the module itself or its `default` property. */
  cjsDefault?: 'module' | 'property';
}

const IMPORTS: Import[] = [
  {
    from: '@portcullis/core',
    names: [
      'createFailureLimiter',
      'createWindowLimiter',
      'createSessionCreationLimiter',
      'createRestartScheduler',
      'MemoryStore',
      'resolveClient',
      'authSubject',
      'normalizeIp',
      'isLoopback',
      'normalizeOrigin',
      'authRateLimitedError',
      'methodRateLimitedError',
      'sessionRateLimitMessage',
      'rateLimitHeaders',
      'presets',
      'PortcullisConfigError',
      'systemClock',
    ],
  },
  {
    from: '@portcullis/express',
    names: [
      ['rateLimit', 'expressRateLimit'],
      ['authGuard', 'expressAuthGuard'],
      ['webhookGuard', 'expressWebhookGuard'],
    ],
  },
  {
    from: '@portcullis/koa',
    names: [
      ['rateLimit', 'koaRateLimit'],
      ['authGuard', 'koaAuthGuard'],
      ['webhookGuard', 'koaWebhookGuard'],
    ],
  },
  {
    from: '@portcullis/fastify',
    default: 'portcullis',
    cjsDefault: 'property',
    names: [
      ['portcullis', 'namedPortcullis'],
      ['rateLimit', 'fastifyRateLimit'],
      ['authGuard', 'fastifyAuthGuard'],
      ['webhookGuard', 'fastifyWebhookGuard'],
    ],
  },
  {
    from: '@portcullis/hono',
    names: [
      ['rateLimit', 'honoRateLimit'],
      ['authGuard', 'honoAuthGuard'],
      ['webhookGuard', 'honoWebhookGuard'],
    ],
  },
  {
    from: '@portcullis/fetch',
    names: [
      ['rateLimit', 'fetchRateLimit'],
      ['authGuard', 'fetchAuthGuard'],
      ['webhookGuard', 'fetchWebhookGuard'],
      'decisionOf',
    ],
  },
  { from: '@portcullis/ws', names: ['guardUpgrade', 'createConnectAuth'] },
  {
    from: '@portcullis/rpc',
    names: ['withMethodQuotas', 'controlPlaneWriteMethods', 'toJsonRpcError'],
  },
  { from: '@portcullis/redis', names: ['RedisStore'] },
  { from: '@portcullis/otel', names: ['instrument'] },
  { from: 'express', default: 'express', cjsDefault: 'module' },
  { from: 'koa', default: 'Koa', cjsDefault: 'module' },
  { from: 'fastify', default: 'Fastify', cjsDefault: 'module' },
  { from: 'hono', names: ['Hono'] },
  { from: 'ioredis', names: ['Redis'] },
  { from: 'node:http', names: ['createServer'] },
];

const local = (name: string | [string, string]) => (typeof name === 'string' ? name : name[1]);

/** `import` statements (ESM JavaScript, and TypeScript in either module system). */
function importHeader(): string {
  return IMPORTS.map(({ from, names = [], default: def }) => {
    const named = names.map((n) => (typeof n === 'string' ? n : `${n[0]} as ${n[1]}`));
    const parts = [def, named.length > 0 ? `{ ${named.join(', ')} }` : undefined].filter(Boolean);
    return `import ${parts.join(', ')} from '${from}';`;
  }).join('\n');
}

/** `require` calls (CommonJS JavaScript). */
function requireHeader(): string {
  return IMPORTS.flatMap(({ from, names = [], default: def, cjsDefault }) => {
    const lines: string[] = [];
    if (def)
      lines.push(
        `const ${def} = require('${from}')${cjsDefault === 'property' ? '.default' : ''};`,
      );
    const named = names.map((n) => (typeof n === 'string' ? n : `${n[0]}: ${n[1]}`));
    if (named.length > 0) lines.push(`const { ${named.join(', ')} } = require('${from}');`);
    return lines;
  }).join('\n');
}

/** `typeof` of every public name, by package. */
function exportsReport(): string {
  const entries = IMPORTS.filter((i) => i.from.startsWith('@portcullis/')).map(
    ({ from, names = [], default: def }) => {
      const all = [...(def ? [`default: typeof ${def}`] : [])];
      for (const n of names) all.push(`${typeof n === 'string' ? n : n[0]}: typeof ${local(n)}`);
      return `'${from}': { ${all.join(', ')} }`;
    },
  );
  return `{ ${entries.join(', ')} }`;
}

const BODY = `
async function main() {
  const clock = { now: () => 1_000_000 };

  // core: a failure limiter locks a client out; a window limiter refuses the second call.
  const auth = createFailureLimiter({ maxAttempts: 2, windowMs: 60_000, lockoutMs: 60_000, clock });
  await auth.recordFailure('203.0.113.7', 'password');
  await auth.recordFailure('203.0.113.7', 'password');
  const locked = await auth.check('203.0.113.7', 'password');
  const other = await auth.check('198.51.100.1', 'password');
  await auth.close();
  const perKey = createWindowLimiter({ limit: 1, windowMs: 1_000, clock });
  await perKey.consume('k');
  const second = await perKey.consume('k');
  await perKey.close();

  // Every package rejects a bad option with core's error class: one core, shared by all.
  const attempts = {
    core: () => createFailureLimiter({ maxAttempts: 0 }),
    express: () => expressRateLimit({ limit: 0 }),
    koa: () => koaRateLimit({ limit: 0 }),
    fastify: () => fastifyRateLimit({ limit: 0 }),
    hono: () => honoRateLimit({ limit: 0 }),
    fetch: () => fetchRateLimit({ limit: 0, clientAddress: () => undefined }),
    ws: () => createConnectAuth({ maxAttempts: 0 }),
    rpc: () => withMethodQuotas(() => null, { limit: 0 }),
    redis: () => new RedisStore({ sendCommand: async () => null, timeoutMs: 0 }),
    otel: () => instrument({ maxActiveLockouts: 0 }),
  };
  const configErrors = Object.fromEntries(
    Object.entries(attempts).map(([name, attempt]) => {
      try {
        attempt();
        return [name, 'no error'];
      } catch (error) {
        return [name, error instanceof PortcullisConfigError ? error.code : String(error)];
      }
    }),
  );

  // HTTP adapters: a limit of 1, two requests.
  const expressApp = express();
  expressApp.use(expressRateLimit({ limit: 1 }));
  expressApp.get('/', (_req, res) => {
    res.send('ok');
  });
  const koaApp = new Koa();
  koaApp.use(koaRateLimit({ limit: 1 }));
  koaApp.use((ctx) => {
    ctx.body = 'ok';
  });
  const servers = { express: createServer(expressApp), koa: createServer(koaApp.callback()) };
  const http = [];
  for (const [name, server] of Object.entries(servers)) {
    await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(null)));
    const address = server.address();
    const url = 'http://127.0.0.1:' + (typeof address === 'object' && address ? address.port : 0);
    const first = await fetch(url);
    const refused = await fetch(url);
    http.push([name, first.status, refused.status, refused.headers.get('retry-after')].join(' '));
    server.closeAllConnections();
    server.close();
  }
  const fastifyApp = Fastify();
  await fastifyApp.register(portcullis, { limit: 1 });
  fastifyApp.get('/', async () => 'ok');
  const fastifyFirst = await fastifyApp.inject({ url: '/' });
  const fastifyRefused = await fastifyApp.inject({ url: '/' });
  http.push(['fastify', fastifyFirst.statusCode, fastifyRefused.statusCode, fastifyRefused.headers['retry-after']].join(' '));
  const honoApp = new Hono();
  honoApp.use(honoRateLimit({ limit: 1, clientAddress: () => '203.0.113.7' }));
  honoApp.get('/', (c) => c.text('ok'));
  const honoFirst = await honoApp.request('/');
  const honoRefused = await honoApp.request('/');
  http.push(['hono', honoFirst.status, honoRefused.status, honoRefused.headers.get('retry-after')].join(' '));
  const handler = fetchRateLimit({ limit: 1, clientAddress: () => '203.0.113.7' })(() => new Response('ok'));
  const fetchFirst = await handler(new Request('http://x/'));
  const fetchRefused = await handler(new Request('http://x/'));
  http.push(['fetch', fetchFirst.status, fetchRefused.status, fetchRefused.headers.get('retry-after')].join(' '));
  await fastifyApp.close();

  // ws: the first-frame lockout.
  const connectAuth = createConnectAuth({ maxAttempts: 1, clock });
  const peer = { socket: { remoteAddress: '203.0.113.9' }, headers: {} };
  const wrong = await connectAuth.attempt(peer, 'invalid');
  const right = await connectAuth.attempt(peer, 'ok');
  await connectAuth.close();

  // rpc: the third config.patch within the window is refused; reads are free.
  const guarded = withMethodQuotas((method) => 'done ' + method, { limit: 2 });
  const calls = [];
  for (const method of ['config.patch', 'config.patch', 'config.get', 'config.patch']) {
    try {
      calls.push(await guarded(method, {}, { deviceId: 'd1', clientIp: '203.0.113.7' }));
    } catch (error) {
      calls.push(error instanceof Error ? error.message.replace(/\\d+s$/, '<n>s') : String(error));
    }
  }
  guarded.close();

  // redis: a store whose Redis fails refuses with 'store-error' under onError 'closed'; the
  // documented ioredis wiring type-checks and constructs (the client never connects).
  const down = new RedisStore({
    sendCommand: async () => {
      throw new Error('no Redis here');
    },
    onError: 'closed',
    logger: { warn: () => {}, error: () => {} },
  });
  const viaRedis = createWindowLimiter({ store: down, limit: 5 });
  const outage = await viaRedis.consume('k');
  await viaRedis.close();
  down.close();
  const ioredis = new Redis({ lazyConnect: true });
  const wired = new RedisStore({ sendCommand: (args) => ioredis.call(String(args[0]), ...args.slice(1)) });
  wired.close();
  ioredis.disconnect();

  return {
    build: RESOLVED.includes('/dist/esm/') ? 'esm' : RESOLVED.includes('/dist/cjs/') ? 'cjs' : RESOLVED,
    resolved: RESOLVED,
    exports: ${exportsReport()},
    sameFastifyPlugin: portcullis === namedPortcullis,
    writeMethods: controlPlaneWriteMethods.length,
    failure: [locked.allowed, locked.reason, locked.retryAfterMs, other.reason].join(' '),
    lockoutBody: JSON.stringify(authRateLimitedError(locked.retryAfterMs)),
    window: [second.allowed, second.reason, second.retryAfterMs].join(' '),
    configErrors,
    http,
    ws: [wrong.ok, right.ok, right.ok ? '' : right.reason + ' ' + right.closeCode].join(' '),
    rpc: calls,
    redis: [outage.allowed, outage.reason, wired.prefix].join(' '),
  };
}

main().then(
  (report) => console.log(JSON.stringify(report)),
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
`;

const PROGRAMS = {
  'esm.mjs': `${importHeader()}\nconst RESOLVED = import.meta.resolve('@portcullis/core');\n${BODY}`,
  'cjs.cjs': `'use strict';\n${requireHeader()}\nconst RESOLVED = require.resolve('@portcullis/core');\n${BODY}`,
  'ts-esm.mts': `${importHeader()}\nconst RESOLVED = import.meta.resolve('@portcullis/core');\n${BODY}`,
  'ts-cjs.cts': `${importHeader()}\nconst RESOLVED = require.resolve('@portcullis/core');\n${BODY}`,
};

// ---------------------------------------------------------------------------------------------

/** `npm` without the settings of an npm that may be running this test (workspace flags etc.). */
const npmEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([key]) =>
      !key.toLowerCase().startsWith('npm_') ||
      /^npm_config_(cache|registry|userconfig|proxy|https_proxy|noproxy|cafile|strict_ssl)$/i.test(
        key,
      ),
  ),
);

async function sh(cmd: string, args: string[], cwd: string, timeout = 60_000): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { cwd, env: npmEnv, timeout, maxBuffer: 32 << 20 });
    return stdout;
  } catch (error) {
    const e = error as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
    );
  }
}

/**
 * Runs tsc with `skipLibCheck: false`, so our declarations are checked as strictly as the user's
 * code. Errors inside third-party declarations (at the time of writing, `@types/koa` naming a type
 * that `content-disposition` 1.x no longer exports) are not ours and do not fail the test; any
 * error in the programs or in `@portcullis/*` does. tsc still emits when it reports errors.
 */
async function compile(project: string, config: string): Promise<void> {
  try {
    await run(process.execPath, [tsc, '-p', config], {
      cwd: project,
      env: npmEnv,
      timeout: 60_000,
    });
  } catch (error) {
    const output = String((error as { stdout?: string }).stdout ?? error);
    const errors = output.split('\n').filter((line) => /\): error TS\d+/.test(line));
    const ours = errors.filter(
      (line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/@portcullis/'),
    );
    if (ours.length > 0 || errors.length === 0)
      throw new Error(`tsc -p ${config} failed in ${project}:\n${output}`);
  }
  for (const file of ['ts-esm.mjs', 'ts-cjs.cjs'])
    if (!existsSync(join(project, config.replace(/^tsconfig\.(.*)\.json$/, 'out-$1'), file)))
      throw new Error(`tsc -p ${config} emitted no ${file}`);
}

interface Packed {
  name: string;
  filename: string;
  files: { path: string }[];
}

let scratch: string;
let packed: Packed[] = [];
const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'portcullis-install-'));
  const tarballs = join(scratch, 'tarballs');
  mkdirSync(tarballs);
  // Builds what is stale and packs under the build lock, so no build rewrites a dist mid-pack.
  const out = await sh(
    process.execPath,
    [join(repo, 'scripts', 'pack.mjs'), '--json', tarballs],
    repo,
    180_000,
  );
  packed = JSON.parse(out);

  const project = join(scratch, 'project');
  const dependencies = { ...PEERS };
  for (const p of packed) dependencies[p.name] = `file:${join(tarballs, p.filename)}`;
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'portcullis-install-check', version: '0.0.0', private: true, dependencies }, null, 2)}\n`,
  );
  await sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], project, 120_000);

  for (const [file, source] of Object.entries(PROGRAMS)) writeFileSync(join(project, file), source);
  const tsconfig = (module: string) => ({
    compilerOptions: {
      module,
      moduleResolution: module,
      target: 'ES2022',
      lib: ['ES2023'],
      types: ['node'],
      strict: true,
      esModuleInterop: true,
      skipLibCheck: false,
      outDir: `out-${module}`,
    },
    files: ['ts-esm.mts', 'ts-cjs.cts'],
  });
  for (const module of ['node16', 'nodenext']) {
    writeFileSync(join(project, `tsconfig.${module}.json`), JSON.stringify(tsconfig(module)));
    await compile(project, `tsconfig.${module}.json`);
  }
}, 180_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const typeofExports = (names: (string | [string, string])[], objects: string[] = []) =>
  Object.fromEntries(
    names.map((n) => {
      const name = typeof n === 'string' ? n : n[0];
      return [name, objects.includes(name) ? 'object' : 'function'];
    }),
  );

function expectedReport(build: 'esm' | 'cjs') {
  const exports: Record<string, Record<string, string>> = {};
  for (const { from, names = [], default: def } of IMPORTS) {
    if (!from.startsWith('@portcullis/')) continue;
    exports[from] = {
      ...(def ? { default: 'function' } : {}),
      ...typeofExports(names, ['presets', 'systemClock', 'controlPlaneWriteMethods']),
    };
  }
  return {
    build,
    resolved: expect.stringContaining(
      join(scratch, 'project', 'node_modules', '@portcullis', 'core', 'dist', build),
    ),
    exports,
    sameFastifyPlugin: true,
    writeMethods: 8,
    failure: 'false locked 60000 allowed',
    lockoutBody: JSON.stringify({
      code: 'INVALID_REQUEST',
      message: 'unauthorized: too many failed authentication attempts (retry later)',
      retryable: true,
      retryAfterMs: 60_000,
      details: {
        code: 'AUTH_RATE_LIMITED',
        authReason: 'rate_limited',
        recommendedNextStep: 'wait_then_retry',
      },
    }),
    window: 'false limited 1000',
    configErrors: {
      core: 'ERR_PORTCULLIS_MAX_ATTEMPTS',
      express: 'ERR_PORTCULLIS_LIMIT',
      koa: 'ERR_PORTCULLIS_LIMIT',
      fastify: 'ERR_PORTCULLIS_LIMIT',
      hono: 'ERR_PORTCULLIS_LIMIT',
      fetch: 'ERR_PORTCULLIS_LIMIT',
      ws: 'ERR_PORTCULLIS_MAX_ATTEMPTS',
      rpc: 'ERR_PORTCULLIS_LIMIT',
      redis: 'ERR_PORTCULLIS_TIMEOUT_MS',
      otel: 'ERR_PORTCULLIS_MAX_ACTIVE_LOCKOUTS',
    },
    http: [
      'express 200 429 60',
      'koa 200 429 60',
      'fastify 200 429 60',
      'hono 200 429 60',
      'fetch 200 429 60',
    ],
    ws: 'false false rate_limited 1008',
    rpc: [
      'done config.patch',
      'done config.patch',
      'done config.get',
      'rate limit exceeded for config.patch; retry after <n>s',
    ],
    redis: 'false store-error portcullis:',
  };
}

/**
 * A file that exists for tests: `*.test.*`, `*.spec.*`, `*.test-util.*`, `*.test-d.ts`, anything
 * under a `test/`, `tests/` or `__tests__/` folder, and the fixtures and snapshots folders.
 */
function isTestFile(path: string): boolean {
  return (
    /\.(test|spec)(-util|-d)?\.[cm]?[jt]sx?$/.test(path) ||
    /(^|\/)(test|tests|__tests__|__snapshots__|fixtures)\//.test(path)
  );
}

/**
 * The module specifiers a JavaScript or TypeScript text imports, re-exports or requires. Comments
 * go first: a JSDoc example that imports a client is no import.
 */
function importsOf(source: string): string[] {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set<string>();
  const patterns = [
    /\b(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) found.add(m[1] as string);
  return [...found];
}

/** The package a bare specifier names (`@scope/name` or `name`), or undefined for a relative one. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/')) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

/** `file`'s directory and `specifier` joined, POSIX-style as tarball paths are. */
const joinPath = (file: string, specifier: string) =>
  posix.normalize(posix.join(posix.dirname(file), specifier));

/**
 * The shipped files a package's entry points reach: every file named by `exports` (any
 * condition), `main`, `module`, `types` and `bin`; every shipped file those import (a `./x.js`
 * specifier reaches `x.js`, `x.d.ts` or `x.ts`, whichever ships); the declarations beside each
 * reached module (`x.d.ts` beside `x.js`); the source map each names
 * with `sourceMappingURL`; the sources each map lists; and the package.json nearest each reached
 * file (dist/cjs/package.json marks its folder CommonJS). A shipped file outside this set is
 * one no user can load: a test helper, a stray build output, a leftover.
 */
function reachedFiles(root: string, manifest: Record<string, unknown>, shipped: Set<string>) {
  const queue: string[] = [];
  const name = (value: unknown): void => {
    if (typeof value === 'string') queue.push(posix.normalize(value));
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(name);
  };
  for (const field of ['exports', 'main', 'module', 'types', 'bin']) name(manifest[field]);
  const reached = new Set<string>();
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (reached.has(file) || !shipped.has(file)) continue;
    reached.add(file);
    const text = readFileSync(join(root, file), 'utf8');
    if (file.endsWith('.map')) {
      const map = JSON.parse(text) as { sources: string[]; sourceRoot?: string };
      for (const source of map.sources)
        queue.push(joinPath(file, posix.join(map.sourceRoot ?? '', source)));
      continue;
    }
    if (!/\.[cm]?[jt]s$/.test(file)) continue;
    // A module's declarations are what TypeScript loads beside it (the CLI's binary has no other).
    queue.push(file.replace(/\.([cm]?)js$/, '.d.$1ts'));
    for (const specifier of importsOf(text)) {
      if (packageOf(specifier) !== undefined) continue;
      const target = joinPath(file, specifier);
      queue.push(
        target,
        target.replace(/\.([cm]?)js$/, '.d.$1ts'),
        target.replace(/\.([cm]?)js$/, '.$1ts'),
        `${target}.ts`,
        `${target}.d.ts`,
      );
    }
    for (const m of text.matchAll(/^\/\/# sourceMappingURL=(\S+)$/gm))
      queue.push(joinPath(file, m[1] as string));
  }
  for (const file of [...reached])
    for (let dir = posix.dirname(file); dir !== '.'; dir = posix.dirname(dir))
      if (shipped.has(`${dir}/package.json`)) reached.add(`${dir}/package.json`);
  return reached;
}

describe('the packed packages', () => {
  it('pack dist (ESM, CommonJS, types for each), the README, LICENSE and CHANGELOG, and no tests', () => {
    expect(packed.map((p) => p.name).sort()).toEqual(
      PACKAGES.map((p) => `@portcullis/${p}`).sort(),
    );
    for (const p of packed) {
      const files = p.files.map((f) => f.path);
      expect(files, p.name).toEqual(
        expect.arrayContaining([
          'package.json',
          'README.md',
          'LICENSE',
          'CHANGELOG.md',
          'dist/esm/index.js',
          'dist/esm/index.d.ts',
          'dist/cjs/index.js',
          'dist/cjs/index.d.ts',
          'dist/cjs/package.json',
        ]),
      );
      expect(files.filter(isTestFile), p.name).toEqual([]);
    }
    const core = packed.find((p) => p.name === '@portcullis/core')?.files.map((f) => f.path);
    expect(core).toEqual(
      expect.arrayContaining(['dist/esm/testing/index.js', 'dist/esm/testing/index.d.ts']),
    );
    // ./testing is ESM only (it imports vitest), so the CommonJS build has no copy of it.
    expect(core?.filter((f) => f.startsWith('dist/cjs/testing/'))).toEqual([]);
  });

  it('ship no test helper: every shipped module imports only shipped files, Node built-ins and its own dependencies', async () => {
    const { builtinModules } = await import('node:module');
    const builtins = new Set(builtinModules);
    const wrong: string[] = [];
    for (const p of packed) {
      const root = join(scratch, 'project', 'node_modules', ...p.name.split('/'));
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
      const allowed = new Set([
        p.name,
        ...Object.keys(manifest.dependencies ?? {}),
        ...Object.keys(manifest.peerDependencies ?? {}),
      ]);
      const shipped = new Set(p.files.map((f) => f.path));
      for (const file of shipped) {
        if (!/\.[cm]?[jt]s$/.test(file)) continue;
        for (const specifier of importsOf(readFileSync(join(root, file), 'utf8'))) {
          const name = packageOf(specifier);
          if (name === undefined) {
            // A relative import of a source file names its build output (`./x.js` for `./x.ts`).
            const target = join(file, '..', specifier).replace(/\\/g, '/');
            const candidates = [target, target.replace(/\.[cm]?js$/, '.ts'), `${target}.ts`];
            if (!candidates.some((c) => shipped.has(c)))
              wrong.push(`${p.name}/${file} imports ${specifier}, which is not shipped`);
          } else if (
            !specifier.startsWith('node:') &&
            !builtins.has(specifier) &&
            !allowed.has(name)
          ) {
            wrong.push(`${p.name}/${file} imports ${specifier}, which is no dependency`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('ship only what their entry points reach, besides package.json, README, LICENSE and CHANGELOG', () => {
    const unreached: string[] = [];
    for (const p of packed) {
      const root = join(scratch, 'project', 'node_modules', ...p.name.split('/'));
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
      const shipped = new Set(p.files.map((f) => f.path));
      const reached = reachedFiles(root, manifest, shipped);
      for (const file of shipped)
        if (
          !reached.has(file) &&
          !['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'].includes(file)
        )
          unreached.push(`${p.name}/${file}`);
    }
    expect(unreached).toEqual([]);
  });

  it('ship no source map without its sources, and name no map that is not shipped', () => {
    const broken: string[] = [];
    for (const p of packed) {
      const root = join(scratch, 'project', 'node_modules', ...p.name.split('/'));
      const shipped = new Set(p.files.map((f) => f.path));
      let maps = 0;
      for (const file of shipped) {
        const text = readFileSync(join(root, file), 'utf8');
        if (file.endsWith('.map')) {
          maps++;
          const map = JSON.parse(text) as { sources: string[]; sourceRoot?: string };
          for (const source of map.sources) {
            const path = joinPath(file, posix.join(map.sourceRoot ?? '', source));
            if (!shipped.has(path))
              broken.push(`${p.name}/${file} maps ${path}, which is not shipped`);
          }
        } else if (/\.[cm]?[jt]s$/.test(file)) {
          for (const m of text.matchAll(/^\/\/# sourceMappingURL=(\S+)$/gm))
            if (!shipped.has(joinPath(file, m[1] as string)))
              broken.push(`${p.name}/${file} names ${m[1]}, which is not shipped`);
        }
      }
      // Declaration maps are what make "go to definition" land in the TypeScript source.
      if (maps === 0) broken.push(`${p.name} ships no declaration map`);
    }
    expect(broken).toEqual([]);
  });

  it("carry the repository's LICENSE and a CHANGELOG with an entry for the packed version", () => {
    const license = readFileSync(join(repo, 'LICENSE'), 'utf8');
    for (const p of packed) {
      const root = join(scratch, 'project', 'node_modules', ...p.name.split('/'));
      const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
      expect(readFileSync(join(root, 'LICENSE'), 'utf8'), p.name).toBe(license);
      expect(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'), p.name).toContain(
        `\n## ${version}\n`,
      );
    }
  });

  it('the test-file rule catches every kind of test helper a package could ship', () => {
    expect(
      [
        'src/equivalence-ops.test-util.ts',
        'src/index.test.ts',
        'src/a.spec.mjs',
        'src/types.test-d.ts',
        'src/__tests__/x.ts',
        'test/helpers.js',
        'src/fixtures/a.json',
        'dist/esm/harness.test-util.js',
      ].filter((f) => !isTestFile(f)),
    ).toEqual([]);
    expect(
      [
        'src/index.ts',
        'dist/esm/testing/index.js',
        'src/testing/store-conformance.ts',
        'README.md',
      ].filter(isTestFile),
    ).toEqual([]);
  });

  it('install from the tarballs alone: every @portcullis dependency resolves to a packed file', () => {
    const lock = JSON.parse(readFileSync(join(scratch, 'project', 'package-lock.json'), 'utf8'));
    const installed = Object.entries(lock.packages as Record<string, { resolved?: string }>).filter(
      ([path]) => path.includes('node_modules/@portcullis/'),
    );
    expect(installed.map(([path]) => path).sort()).toEqual(
      PACKAGES.map((p) => `node_modules/@portcullis/${p}`).sort(),
    );
    for (const [path, entry] of installed) expect(entry.resolved, path).toMatch(/^file:/);
  });
});

describe('the installed portcullis command (@portcullis/cli)', () => {
  it('is linked into node_modules/.bin and runs: --version, and bad usage exits 2', async () => {
    const project = join(scratch, 'project');
    const bin = join(project, 'node_modules', '.bin', 'portcullis');
    const { version } = JSON.parse(readFileSync(join(repo, 'packages/cli/package.json'), 'utf8'));
    expect(await sh(bin, ['--version'], project)).toBe(`${version}\n`);
    const bad = await run(bin, ['ban', '198.51.100.7'], { cwd: project, env: npmEnv }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr }),
    );
    expect([bad.code, bad.stderr?.split('\n')[0]]).toEqual([
      2,
      "error: required option '--for <duration>' not specified",
    ]);
  });
});

describe('loading the installed packages four ways', () => {
  const variants = [
    ['ESM JavaScript (.mjs, import)', 'esm.mjs', 'esm'],
    ['CommonJS JavaScript (.cjs, require)', 'cjs.cjs', 'cjs'],
    ['TypeScript ESM (.mts, module node16)', 'out-node16/ts-esm.mjs', 'esm'],
    ['TypeScript CommonJS (.cts, module node16)', 'out-node16/ts-cjs.cjs', 'cjs'],
    ['TypeScript ESM (.mts, module nodenext)', 'out-nodenext/ts-esm.mjs', 'esm'],
    ['TypeScript CommonJS (.cts, module nodenext)', 'out-nodenext/ts-cjs.cjs', 'cjs'],
  ] as const;

  it.each(variants)(
    '%s: every public name, one real call into each package',
    async (_, file, build) => {
      const out = await sh(process.execPath, [file], join(scratch, 'project'), 30_000);
      expect(JSON.parse(out)).toEqual(expectedReport(build));
    },
  );

  it('TypeScript compiled each file to its own module system', () => {
    const project = join(scratch, 'project');
    for (const module of ['node16', 'nodenext']) {
      const esm = readFileSync(join(project, `out-${module}`, 'ts-esm.mjs'), 'utf8');
      const cjs = readFileSync(join(project, `out-${module}`, 'ts-cjs.cjs'), 'utf8');
      expect(esm).toMatch(/^import .* from '@portcullis\/core';$/m);
      expect(esm).not.toMatch(/\brequire\(/);
      expect(cjs).toMatch(/require\("@portcullis\/core"\)/);
      expect(cjs).not.toMatch(/^import /m);
    }
  });
});
