#!/usr/bin/env node
// `npm start`: the reference gateway on 127.0.0.1, configured from gateway.json beside this folder
// (or --config), with in-memory limits. Prints what it serves, the limits in force and how to try
// them; then logs one JSON line per event on stdout.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from './config.js';
import { createGateway, describeLimits } from './gateway.js';

/** The committed demo config. */
export const DEFAULT_CONFIG = fileURLToPath(new URL('../gateway.json', import.meta.url));

const USAGE = `usage: npm start -- [--port <n>] [--config <path>]

  --port <n>       listen on this port (0 = any free port); default: gateway.port, else 18789
  --config <path>  JSON config; default: examples/gateway/gateway.json
  --help           this text
`;

/**
 * Reads the command line.
 * @param {string[]} argv
 * @returns {{ port?: number, configPath: string, help: boolean }}
 */
export function parseCommandLine(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  let port;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65_535)
      throw new Error(`--port must be an integer from 0 to 65535, got ${values.port}`);
  }
  return {
    ...(port !== undefined && { port }),
    configPath: values.config === undefined ? DEFAULT_CONFIG : resolve(values.config),
    help: values.help === true,
  };
}

/**
 * The start banner.
 * @param {import('./config.js').GatewayConfig} config
 * @param {{ url: string, wsUrl: string }} address
 * @param {string} configPath
 */
export function banner(config, address, configPath) {
  const demo = configPath === DEFAULT_CONFIG;
  const token = demo ? config.gateway.auth.token : '<gateway.auth.token>';
  const hookToken = demo ? config.hooks.token : '<hooks.token>';
  const connect = JSON.stringify({
    type: 'req',
    id: '1',
    method: 'connect',
    params: { auth: { token } },
  });
  const rows = describeLimits(config).map(([name, what]) => `  ${name.padEnd(17)} ${what}`);
  return [
    `Portcullis gateway "${config.gateway.name}" listening on ${address.url} (in-memory limits)`,
    `  config           ${configPath}`,
    `  WebSocket        ${address.wsUrl}  (first frame: connect; then {"type":"req","id","method","params"})`,
    `  webhooks         POST ${address.url}/hooks/<name>  (Authorization: Bearer <hooks.token> or x-portcullis-token)`,
    `  status           ${address.url}/status  (also /status.json and /status/events; no auth from loopback only)`,
    `  metrics          ${address.url}/metrics  (Prometheus text format; the same access as /status)`,
    'limits in force',
    ...rows,
    'try it',
    demo
      ? `  token ${token}   password ${config.gateway.auth.password ?? '(none)'}   hooks token ${hookToken}`
      : `  credentials: the ones in ${configPath}`,
    `  npx wscat -c ${address.wsUrl}   then send ${connect}`,
    `  curl -i -X POST ${address.url}/hooks/demo -H 'Authorization: Bearer ${hookToken}' -d '{}'`,
    '  npm run demo     (walks through every limit in a few seconds)',
    '',
  ].join('\n');
}

/**
 * Why the gateway could not listen, and what to do about it.
 * @param {NodeJS.ErrnoException} error
 * @param {number} port
 */
export function listenError(error, port) {
  if (error.code === 'EADDRINUSE') {
    const other = port < 65_535 ? port + 1 : 0;
    return (
      `gateway: port ${port} on 127.0.0.1 is already in use (another gateway still running?).\n` +
      `  Start on another port: npm start -- --port ${other}   (--port 0 picks any free port)\n`
    );
  }
  if (error.code === 'EACCES')
    return `gateway: not allowed to listen on port ${port}; choose a port above 1023: npm start -- --port 18789\n`;
  return `gateway: cannot listen on 127.0.0.1:${port}: ${error.message}\n`;
}

/**
 * Starts the gateway as `npm start` does. Returns the exit code to use when it could not start
 * (2: bad flags, 1: invalid config or port in use), or the running gateway.
 * @param {string[]} argv the arguments after the script
 * @param {{
 *   stdout?: (text: string) => void,
 *   stderr?: (text: string) => void,
 *   logger?: import('./logger.js').JsonLogger,
 * }} [io] where text and logs go (default: the process's stdout and stderr, JSON logs on stdout)
 * @returns {Promise<{ code: number, gateway?: import('./gateway.js').Gateway }>}
 */
export async function start(argv, io = {}) {
  const stdout = io.stdout ?? ((text) => process.stdout.write(text));
  const stderr = io.stderr ?? ((text) => process.stderr.write(text));
  let args;
  try {
    args = parseCommandLine(argv);
  } catch (error) {
    stderr(`gateway: ${/** @type {Error} */ (error).message}\n\n${USAGE}`);
    return { code: 2 };
  }
  if (args.help) {
    stdout(USAGE);
    return { code: 0 };
  }
  let config;
  try {
    config = loadConfig(args.configPath);
  } catch (error) {
    const e = /** @type {Error & { code?: string }} */ (error);
    const code = e.code === undefined ? '' : ` [${e.code}]`;
    stderr(`gateway: invalid config ${args.configPath}: ${e.message}${code}\n`);
    return { code: 1 };
  }
  const gateway = createGateway({
    config,
    configPath: args.configPath,
    ...(io.logger !== undefined && { logger: io.logger }),
  });
  let address;
  try {
    address = await gateway.listen(args.port === undefined ? {} : { port: args.port });
  } catch (error) {
    stderr(
      listenError(/** @type {NodeJS.ErrnoException} */ (error), args.port ?? config.gateway.port),
    );
    await gateway.close();
    return { code: 1 };
  }
  stdout(banner(config, address, args.configPath));
  gateway.logger.info({ event: 'listening', ...address }, `gateway listening on ${address.url}`);
  return { code: 0, gateway };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { code, gateway } = await start(process.argv.slice(2));
  if (gateway === undefined) {
    process.exitCode = code;
  } else {
    const stop = () => {
      gateway.close().then(
        () => process.exit(0),
        (error) => {
          console.error('gateway: closing failed', error);
          process.exit(1);
        },
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // Live limits: a changed gateway.json (or SIGHUP) puts its numbers in force, lockouts kept.
    gateway.watchConfig();
    process.on('SIGHUP', () => gateway.reload('SIGHUP'));
  }
}
