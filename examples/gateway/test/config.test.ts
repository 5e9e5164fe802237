// The config file and the command line: invalid configs are refused at start with the option named.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, mergePatch, parseConfig, REDACTED, redact } from '../src/config.js';
import { createMemoryLogger } from '../src/logger.js';
import { DEFAULT_CONFIG, parseCommandLine, start } from '../src/main.js';
import { request, testConfig } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'portcullis-gateway-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseConfig', () => {
  it('accepts the committed gateway.json and fills defaults', () => {
    const config = loadConfig(DEFAULT_CONFIG);
    expect(config.gateway.port).toBe(18789);
    expect(config.gateway.auth.rateLimit).toEqual({
      maxAttempts: 10,
      windowMs: 60_000,
      lockoutMs: 300_000,
      exemptLoopback: true,
    });
    expect(parseConfig({ gateway: { auth: { token: 't' } } })).toEqual({
      gateway: {
        name: 'portcullis-gateway',
        port: 18789,
        auth: {
          token: 't',
          rateLimit: {
            maxAttempts: 10,
            windowMs: 60_000,
            lockoutMs: 300_000,
            exemptLoopback: true,
          },
        },
        trustedProxies: [],
      },
      hooks: {},
      plugins: { entries: {} },
    });
  });

  it.each([
    [
      { gateway: { auth: { rateLimit: { maxAttempts: 0 } } } },
      'ERR_PORTCULLIS_MAX_ATTEMPTS',
      'gateway.auth.rateLimit.maxAttempts: createFailureLimiter: option "maxAttempts" must be an integer ≥ 1, got 0',
    ],
    [
      { gateway: { auth: { rateLimit: { windowMs: -1 } } } },
      'ERR_PORTCULLIS_WINDOW_MS',
      'gateway.auth.rateLimit.windowMs: createFailureLimiter: option "windowMs" must be an integer from 1 to 315360000000, got -1',
    ],
    [
      { gateway: { auth: { rateLimit: { exemptLoopback: 'yes' } } } },
      'ERR_PORTCULLIS_EXEMPT_LOOPBACK',
      'gateway.auth.rateLimit.exemptLoopback: createFailureLimiter: option "exemptLoopback" must be a boolean, got "yes"',
    ],
    [
      { gateway: { auth: { rateLimit: { lockoutMS: 5 } } } },
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
      'gateway.auth.rateLimit.lockoutMS: unknown option (expected one of maxAttempts, windowMs, lockoutMs, exemptLoopback)',
    ],
    [
      { gateway: { trustedProxies: ['0.0.0.0/0'] } },
      'ERR_PORTCULLIS_TRUSTED_PROXIES',
      'gateway.trustedProxies: resolveClient: option "trustedProxies" must be an array of IP addresses or CIDR ranges (not true, a hop count or 0.0.0.0/0), got an array',
    ],
    [
      { gateway: { port: 70_000 } },
      'ERR_PORTCULLIS_PORT',
      'gateway.port: must be an integer from 0 to 65535',
    ],
    [
      { gateway: { auth: { token: null, password: null } } },
      'ERR_PORTCULLIS_TOKEN',
      'gateway.auth.token: set gateway.auth.token or gateway.auth.password: without either nobody can connect',
    ],
    [
      { hooks: { token: '' } },
      'ERR_PORTCULLIS_SECRET',
      'hooks.token: must be a non-empty string of at most 512 characters',
    ],
    [
      { extra: true },
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
      'extra: unknown option (expected one of $schema, gateway, hooks, plugins)',
    ],
  ])('refuses %j with %s', (patch, code, message) => {
    expect(() => parseConfig(mergePatch(testConfig(), patch))).toThrow(
      expect.objectContaining({ name: 'PortcullisConfigError', code, message }),
    );
  });

  it('redacts every secret', () => {
    const config = parseConfig(testConfig());
    expect(redact(config)).toMatchObject({
      gateway: { auth: { token: REDACTED, password: REDACTED } },
      hooks: { token: REDACTED },
    });
    expect(config.gateway.auth.token).toBe('test-token');
  });
});

describe('npm start (start())', () => {
  it('exits 1 with the option named on stderr for an invalid config', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({ gateway: { auth: { token: 't', rateLimit: { lockoutMs: 1.5 } } } }),
    );
    let stderr = '';
    const result = await start(['--config', file], {
      stderr: (t) => (stderr += t),
      stdout: () => {},
    });
    expect(result).toEqual({ code: 1 });
    expect(stderr).toBe(
      `gateway: invalid config ${file}: gateway.auth.rateLimit.lockoutMs: createFailureLimiter: option "lockoutMs" must be an integer from 1 to 315360000000, got 1.5 [ERR_PORTCULLIS_LOCKOUT_MS]\n`,
    );
  });

  it('exits 1 for a file that is not JSON, 2 for a bad flag', async () => {
    const file = join(dir, 'broken.json');
    writeFileSync(file, '{ "gateway": ');
    let stderr = '';
    const io = { stderr: (t: string) => (stderr += t), stdout: () => {} };
    expect(await start(['--config', file], io)).toEqual({ code: 1 });
    expect(stderr).toMatch(
      /^gateway: invalid config .*broken\.json: config .*broken\.json is not valid JSON: /,
    );
    expect(await start(['--port', 'abc'], io)).toEqual({ code: 2 });
    expect(await start(['--nope'], io)).toEqual({ code: 2 });
    expect(() => parseCommandLine(['--port', '65536'])).toThrow(
      '--port must be an integer from 0 to 65535',
    );
  });

  it('exits 1 for a port in use, suggesting --port', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      let stderr = '';
      const result = await start(['--port', String(port)], {
        stderr: (t) => (stderr += t),
        stdout: () => {},
        logger: createMemoryLogger(),
      });
      expect(result).toEqual({ code: 1 });
      expect(stderr).toBe(
        `gateway: port ${port} on 127.0.0.1 is already in use (another gateway still running?).\n` +
          `  Start on another port: npm start -- --port ${port + 1}   (--port 0 picks any free port)\n`,
      );
    } finally {
      taken.close();
    }
  });

  it('starts on 127.0.0.1 and prints what it serves, the limits and the token to try', async () => {
    let stdout = '';
    const logger = createMemoryLogger();
    const { code, gateway } = await start(['--port', '0'], {
      stdout: (t) => (stdout += t),
      logger,
    });
    try {
      expect(code).toBe(0);
      const address = gateway?.address();
      expect(address?.host).toBe('127.0.0.1');
      expect(stdout).toContain(`Portcullis gateway "portcullis-demo" listening on ${address?.url}`);
      expect(stdout).toContain(`WebSocket        ${address?.wsUrl}`);
      expect(stdout).toContain(`status           ${address?.url}/status`);
      expect(stdout).toContain(`metrics          ${address?.url}/metrics`);
      expect(stdout).toContain('gateway auth      10 failures / 60 s → 300 s lockout');
      expect(stdout).toContain('webhooks          20 failures / 60 s → 60 s lockout per client IP');
      expect(stdout).toContain(
        'control-plane     30 calls / 60 s per write method per device + IP',
      );
      expect(stdout).toContain('session creation  120 / 10 s');
      expect(stdout).toContain('restart           coalesced, ≥ 30 s apart');
      expect(stdout).toContain('token demo-token-change-me');
      expect(logger.entries()).toContainEqual(
        expect.objectContaining({ event: 'listening', host: '127.0.0.1' }),
      );
      expect((await request(`${address?.url}/healthz`)).body).toBe('ok');
    } finally {
      await gateway?.close();
    }
  });

  it('does not print the credentials of a config other than the demo one', async () => {
    const file = join(dir, 'own.json');
    writeFileSync(file, JSON.stringify(testConfig({ gateway: { auth: { token: 'my-secret' } } })));
    let stdout = '';
    const { gateway } = await start(['--config', file], {
      stdout: (t) => (stdout += t),
      logger: createMemoryLogger(),
    });
    try {
      expect(gateway?.address()?.port).toBeGreaterThan(0);
      expect(stdout).not.toContain('my-secret');
      expect(stdout).toContain(`credentials: the ones in ${file}`);
    } finally {
      await gateway?.close();
    }
  });
});
