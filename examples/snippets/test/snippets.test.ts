// Every README example is a file here that runs as written. This test runs each one as a child
// process (`node <file>`, loading the packages' dist, built by the test setup and again below when
// stale), checks that it exits 0 with exactly the lines listed below and nothing on stderr, and
// checks that every ```js/```ts block of the package READMEs is the code between the file's
// `// snippet:start` and `// snippet:end` markers, named by a `<!-- snippet: <file> -->` line above it.
// The redis-* snippets use the Redis at REDIS_URL (the test setup's), each under a prefix of its own.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DIR, SNIPPET, snippetFiles } from '../run-all.mjs';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
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
];
/** The Redis the redis-* snippets use: the test setup's (test/setup/services.ts) or the default. */
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** What each snippet prints, line by line. */
const OUTPUT: Record<string, string[]> = {
  'express-quickstart.mjs': [
    'login: 401 401 401 401 401 401 401 401 401 401 429 300',
    'other: "default";r=88;t=60',
  ],
  'express-charge-after.mjs': [
    '200 "tokens";r=999;t=60',
    '200 "tokens";r=398;t=60',
    '429 "tokens";r=0;t=60',
  ],
  'express-access-list.mjs': [
    '403 {"code":"ACCESS_DENIED","message":"access denied: scraping","retryable":false,"details":{"reason":"scraping"}}',
    '200 null',
    '403 {"code":"ACCESS_DENIED","message":"access denied: fraud","retryable":false,"details":{"reason":"fraud"}}',
    '200 "default";r=99;t=60',
  ],
  'express-concurrency.mjs': [
    '429 1 {"code":"RATE_LIMITED","message":"too many requests; retry after 1s","retryable":true,"retryAfterMs":1000}',
    '200 200 200',
  ],
  'fastify-quickstart.mjs': [
    'login: 401 401 401 401 401 401 401 401 401 401 429 300',
    'other: "default";r=88;t=60',
  ],
  'fetch-quickstart.mjs': [
    'login: 401 401 401 401 401 401 401 401 401 401 429 300',
    'other: "default";r=99;t=60',
  ],
  'hono-quickstart.mjs': [
    'login: 401 401 401 401 401 401 401 401 401 401 429 300',
    'other: "default";r=88;t=60',
  ],
  'koa-quickstart.mjs': [
    'login: 401 401 401 401 401 401 401 401 401 401 429 300',
    'other: "default";r=88;t=60',
  ],
  'rpc-quickstart.mjs': [
    '{"patched":["theme"]} MethodRateLimitedError UNAVAILABLE rate limit exceeded for config.patch; retry after 60s',
    '{"theme":"dark"}',
  ],
  'otel-quickstart.mjs': [
    'portcullis.decisions {"portcullis.limiter":"api","portcullis.outcome":"allowed","portcullis.dry_run":false} = 1',
  ],
  'core-failure-limiter.mjs': [
    '401 401 401 401 401 401 401 401 401 401 429 AUTH_RATE_LIMITED 300s',
    '200 401',
  ],
  'core-defence-in-depth.mjs': ['account account:alice alice 3600000', 'account 3600'],
  'core-lockouts.mjs': [
    'shared-secret 203.0.113.9 client 300000 ms',
    'default 198.51.100.7 ban 3600000 ms',
  ],
  'core-ip-key.mjs': [
    '203.0.113.7',
    '203.0.113.7',
    '2001:db8:1:2::/64',
    '2001:db8:1::/48',
    '2001:db8:1:2:3:4:5:6',
    'undefined',
  ],
  'core-reconfigure.mjs': [
    'allowed 2/5, retry in 0s',
    'locked 0/3, retry in 600s',
    'locked 0/10, retry in 600s {"maxAttempts":10,"windowMs":60000,"lockoutMs":600000,"exemptLoopback":true,"ipv6Subnet":64,"dryRun":false,"name":"auth"}',
    'limited 0/2, retry in 60s',
    'allowed 0/4, retry in 0s {"algorithm":"fixed-window","limit":4,"windowMs":60000}',
    'ERR_PORTCULLIS_UNKNOWN_OPTION: reconfigure: unknown option "name". Valid options: algorithm, dryRun, limit, windowMs',
  ],
  'core-warnings.mjs': [
    'PORTCULLIS_UNTRUSTED_FORWARDED: Portcullis: X-Forwarded-For arrived from a peer that is not in trustedProxies; it is ignored and the peer itself is the client. If this peer is your reverse proxy, every user behind it now shares one bucket: add its address to trustedProxies.',
    'PORTCULLIS_NAME_CLASH: Portcullis: two limiters named "api" share one store with different numbers (fixed-window 100 per 60000 ms and fixed-window 10 per 60000 ms); they count the same keys under different rules. Give each its own "name".',
    'PORTCULLIS_DUPLICATE_POLICY: Portcullis: two rateLimit middlewares named "default" limited one request (it is counted twice); give each a distinct name',
  ],
  'express-defence-in-depth.mjs': defence(),
  'express-config-errors.mjs': [
    'PortcullisConfigError ERR_PORTCULLIS_UNKNOWN_OPTION: rateLimit: unknown option "windowMS" (did you mean "windowMs"?)',
    'PortcullisConfigError ERR_PORTCULLIS_OPTIONS: authGuard: option "options" must be flat: the failure-limiter options go beside the others since 1.0 (authGuard({ verify, maxAttempts: 5, lockoutMs: 600_000 })), not under "options", got an object',
    'PortcullisConfigError ERR_PORTCULLIS_LIMITER: authGuard: pass either "limiter" or limiter options such as "maxAttempts", not both ("maxAttempts" belongs to the limiter you pass; set it there)',
    'ERR_PORTCULLIS_FACTORY_NOT_CALLED: rateLimit: received a request instead of options. rateLimit is a factory: mount its result, rateLimit(options), not rateLimit itself (app.use(rateLimit({ … })), onRequest: rateLimit({ … }))',
  ],
  'express-outcomes.mjs': outcomes('login', 900),
  'express-per-request.mjs': perRequest(),
  'express-reconfigure.mjs': reconfigured(),
  'express-stacked.mjs': stacked(),
  'express-ipv6-networks.mjs': [
    '429 "default";r=1;t=60, "default-ipv6-56";r=0;t=60',
    '200 203.0.113.9',
  ],
  'express-usage.mjs': usage(94),
  'fastify-defence-in-depth.mjs': defence(),
  'fastify-hook.mjs': [
    'key-alice: 200 "default";r=1;t=60',
    'key-alice: 200 "default";r=0;t=60',
    'key-alice: 429 "default";r=0;t=60',
    'key-bob: 200 "default";r=1;t=60',
    'public: 200 429',
    'ERR_PORTCULLIS_HOOK: portcullis: option "hook" of plugin options must be one of "onRequest", "preParsing", "preValidation", "preHandler", got "onSend"',
  ],
  'fastify-outcomes.mjs': outcomes('login', 900),
  'fastify-per-request.mjs': perRequest(),
  'fastify-reconfigure.mjs': reconfigured(),
  'fastify-stacked.mjs': stacked(),
  'fastify-usage.mjs': [
    'login: 401 401 401 429 600',
    'webhook: 401 Unauthorized',
    'search: 200 200 429 health: 200 null',
    'quota: 100 98 "default";r=98;t=60',
  ],
  'fetch-defence-in-depth.mjs': defence(),
  'fetch-runtimes.mjs': [
    'bun: 203.0.113.1',
    'deno: 2001:db8:1:2::/64',
    'cloudflare: 198.51.100.2',
    'vercel: 192.0.2.3',
    'proxied: 192.0.2.4',
  ],
  'fetch-reconfigure.mjs': reconfigured(),
  'fetch-usage.mjs': ['login: 401 401 401 429 600', 'quota: 203.0.113.9 99 "default";r=99;t=60'],
  'hono-defence-in-depth.mjs': defence(),
  'hono-runtimes.mjs': [
    'bun: 203.0.113.1',
    'deno: 2001:db8:1:2::/64',
    'cloudflare: 198.51.100.2',
    'vercel: 192.0.2.3',
  ],
  'hono-reconfigure.mjs': reconfigured(),
  'hono-usage.mjs': usage(99),
  'koa-defence-in-depth.mjs': defence(),
  'koa-outcomes.mjs': [
    '204 "search";r=2;t=60',
    '204 "search";r=2;t=60',
    '200 "search";r=2;t=60',
    '200 "search";r=1;t=60',
    '204 "search";r=0;t=60',
    '200 "search";r=0;t=60',
    '429 "search";r=0;t=60',
  ],
  'koa-per-request.mjs': perRequest(),
  'koa-reconfigure.mjs': reconfigured(),
  'koa-stacked.mjs': stacked(),
  'koa-usage.mjs': usage(94),
  'otel-usage.mjs': [
    'portcullis.decisions api allowed false = 2',
    'portcullis.decisions api limited false = 1',
    'portcullis.decisions auth allowed false = 2',
    'portcullis.decisions auth locked false = 1',
    'portcullis.lockouts auth client = 1',
    'portcullis.lockouts.active auth = 1',
  ],
  'redis-usage.mjs': [
    'true allowed 10 0s | false locked 0 300s | true allowed 97 0s | keys: 2',
    'keys after reset: 0',
  ],
  'rpc-json-rpc-server.mjs': [
    '1: result {"theme":"light"}',
    '31: error -32029 rate limit exceeded for config.patch; retry after 60s {"method":"config.patch","limit":"30 per 60s"}',
    '32: result {"theme":"light"}',
    '33: error -32600 invalid request: method must be a string, got an array {"code":"INVALID_METHOD"}',
    '34: error -32603 internal error null',
    'null: error -32700 parse error null',
  ],
  'rpc-plain-dispatcher.mjs': [
    '{"theme":"light"} 30 true',
    'UNAVAILABLE rate limit exceeded for config.patch; retry after 60s config.patch|dev-1|203.0.113.7',
    'answerError MethodRateLimitedError UNAVAILABLE',
    'reply {"theme":"light"}',
  ],
  'rpc-restart-reasons.mjs': [
    `restarting ${JSON.stringify({
      reasons: [
        ...Array.from({ length: 16 }, (_, i) => `change ${i + 1}`),
        '(further restart reasons dropped)',
      ],
      dropped: 4,
    })}`,
    'gateway restarted',
  ],
  'rpc-session-restart.mjs': [
    '{"coalesced":false,"delayMs":0,"cooldownMsApplied":0} restarts: 1',
    'next restart in 32s, cooldown 30s',
    '120 ACP session creation rate limit exceeded for session/new; retry after 10s.',
    '{"sessionId":"s1"}',
  ],
  'rpc-ws-handler.mjs': [
    '1: result {"installed":"audit"}',
    '31: error -32029 rate limit exceeded for plugins.install; retry after 60s',
    'null: error -32603 internal error',
  ],
  'ws-defence-in-depth.mjs': [
    'lockout: pair 203.0.113.7 alice',
    'alice from 203.0.113.7: 1008 AUTH_INVALID, 1008 AUTH_INVALID, 1008 AUTH_INVALID, 1008 AUTH_RATE_LIMITED 3600s',
    'bob from 203.0.113.7: ok',
    'alice from 198.51.100.9: ok',
  ],
  'ws-connect-auth.mjs': [
    '1008 AUTH_INVALID',
    '1008 AUTH_INVALID',
    '1008 AUTH_INVALID',
    '1008 AUTH_RATE_LIMITED',
    '1000 ok',
  ],
  'ws-guard-upgrade.mjs': [
    'open, got welcome',
    '401 Unauthorized',
    '401 Unauthorized',
    '401 Unauthorized',
    '429 Too Many Requests, Retry-After: 600',
  ],
  'ws-reconfigure.mjs': [
    '401 401 429 429 {"maxAttempts":10,"windowMs":60000,"lockoutMs":60000,"exemptLoopback":true,"ipv6Subnet":64,"dryRun":false,"name":"auth"}',
  ],
};

// The same example in each HTTP adapter prints the same lines.
function defence(): string[] {
  return [
    'lockout: pair 203.0.113.7 alice',
    'alice from 203.0.113.7: 401 401 401 429 3600',
    'bob from 203.0.113.7: 200',
    'alice from 198.51.100.9: 200',
  ];
}

function usage(remaining: number): string[] {
  return [
    'login: 401 401 401 429 600',
    'webhook: 401 Unauthorized',
    `quota: 100 ${remaining} "default";r=${remaining};t=60`,
  ];
}

function perRequest(): string[] {
  return [
    'key-alice: 200 "plan";q=2;w=60 "plan";r=1;t=60',
    'key-alice: 200 "plan";q=2;w=60 "plan";r=0;t=60',
    'key-alice: 429 "plan";q=2;w=60 "plan";r=0;t=60',
    'key-bob: 200 "plan";q=5;w=60 "plan";r=4;t=60',
    'anonymous: 200 "plan";q=2;w=60 "plan";r=1;t=60',
    'key-alice: 200 "plan";q=5;w=60 "plan";r=4;t=60',
  ];
}

function outcomes(name: string, seconds: number): string[] {
  return ['200', '200', '401', '401', '401', '429'].map(
    (status, i) => `${status} "${name}";r=${[2, 2, 2, 1, 0, 0][i]};t=${seconds}`,
  );
}

function stacked(): string[] {
  return [
    'ratelimit-policy: "burst";q=2;w=10, "daily";q=1000;w=86400',
    'ratelimit: "burst";r=1;t=10, "daily";r=999;t=86400',
    'x-ratelimit-limit: 2',
    'x-ratelimit-remaining: 1',
    '429 "burst";r=0;t=10 10',
  ];
}

function reconfigured(): string[] {
  return [
    '200 "api";q=5;w=60 "api";r=4;t=60',
    '200 "api";q=2;w=60, 429 "api";q=2;w=60',
    '429 60 2',
  ];
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(file: string): Promise<Run> {
  return new Promise((resolve) => {
    // The redis-* snippets connect to REDIS_URL, passed on explicitly.
    const env = { ...process.env, REDIS_URL };
    execFile(
      process.execPath,
      [file],
      { cwd: DIR, env, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The code between a file's markers, as the README must show it. */
function markedCode(file: string): string {
  const text = readFileSync(join(DIR, file), 'utf8');
  const match = /^\/\/ snippet:start\n([\s\S]*?)^\/\/ snippet:end$/m.exec(text);
  if (match === null) throw new Error(`${file} has no // snippet:start … // snippet:end markers`);
  return match[1] as string;
}

interface Block {
  readme: string;
  line: number;
  lang: string;
  file: string | undefined;
  code: string;
}

/** Every fenced block of a README, with the snippet file named by the comment just above it. */
function blocks(readme: string): Block[] {
  const lines = readFileSync(join(REPO, readme), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i] as string);
    if (open === null) continue;
    const start = i;
    let end = i + 1;
    while (end < lines.length && lines[end] !== '```') end++;
    let above = start - 1;
    while (above >= 0 && (lines[above] as string).trim() === '') above--;
    const marker = /^<!-- snippet: (\S+) -->$/.exec((lines[above] ?? '').trim());
    out.push({
      readme,
      line: start + 1,
      lang: open[1] as string,
      file: marker?.[1],
      code: `${lines.slice(start + 1, end).join('\n')}\n`,
    });
    i = end;
  }
  return out;
}

const readmes = PACKAGES.map((name) => `packages/${name}/README.md`);
const all = readmes.flatMap(blocks);
const code = all.filter((b) => b.lang === 'js' || b.lang === 'ts');

beforeAll(() => {
  // The snippets load the packages' dist: build what is stale (the test setup already has).
  execFileSync(process.execPath, [join(REPO, 'scripts/build-if-stale.mjs'), ...PACKAGES], {
    stdio: 'inherit',
  });
}, 180_000);

describe('the snippet files', () => {
  it('each have their expected output listed here', () => {
    expect(snippetFiles()).toEqual(Object.keys(OUTPUT).sort());
  });

  for (const file of snippetFiles()) {
    it(`${file} exits 0 and prints what it should`, async () => {
      const { code, stdout, stderr } = await run(file);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout.split('\n').slice(0, -1)).toEqual(OUTPUT[file]);
    }, 40_000);
  }
});

describe('the READMEs', () => {
  it('show every JavaScript and TypeScript example as a snippet file', () => {
    const loose = code.filter((b) => b.file === undefined).map((b) => `${b.readme}:${b.line}`);
    expect(loose).toEqual([]);
  });

  it('show each snippet file exactly once, in the README of its package', () => {
    const shown = code.map((b) => b.file).sort();
    expect(shown).toEqual(snippetFiles());
    for (const b of code) {
      const name = SNIPPET.exec(b.file ?? '')?.[1];
      expect(b.readme, `${b.file}`).toBe(`packages/${name}/README.md`);
    }
  });

  for (const b of code) {
    if (b.file === undefined) continue;
    it(`${b.readme}:${b.line} is ${b.file} as written`, () => {
      expect(b.lang).toBe('js');
      expect(b.code).toBe(markedCode(b.file as string));
    });
  }
});
