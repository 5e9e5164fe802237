// A throwaway Redis Cluster for the example: 3 primaries + 3 replicas of `redis-server` on free
// ports of 127.0.0.1, created with `redis-cli --cluster create`, nothing persisted, node files in a
// temporary directory. In production the cluster is long-lived and runs elsewhere (see README.md);
// this only lets `npm start` run on a laptop with nothing but redis-server installed.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const HOST = '127.0.0.1';

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `n` distinct free ports of 127.0.0.1 (held open together, so none repeats). @param {number} n */
async function freePorts(n) {
  /** @type {import('node:net').Server[]} */
  const servers = [];
  for (let i = 0; i < n; i++) {
    const server = createServer();
    await new Promise((resolve) => server.listen(0, HOST, () => resolve(undefined)));
    servers.push(server);
  }
  const ports = servers.map(
    (s) => /** @type {import('node:net').AddressInfo} */ (s.address()).port,
  );
  await Promise.all(servers.map((s) => new Promise((r) => s.close(() => r(undefined)))));
  return ports;
}

/** `redis-cli -p <port> <args…>`, its output ('' when the server does not answer). */
async function cli(/** @type {number} */ port, /** @type {string[]} */ ...args) {
  try {
    return (await run('redis-cli', ['-h', HOST, '-p', String(port), ...args], { timeout: 5000 }))
      .stdout;
  } catch {
    return '';
  }
}

/**
 * Starts the cluster; resolves once every node says `cluster_state:ok`.
 * @returns {Promise<{ nodes: { host: string, port: number }[], pids: number[], dir: string,
 *   stop(): Promise<void> }>}
 */
export async function startLocalCluster() {
  const dir = mkdtempSync(join(tmpdir(), 'portcullis-example-cluster-'));
  const all = await freePorts(12);
  const ports = all.slice(0, 6);
  /** @type {import('node:child_process').ChildProcess[]} */
  const children = [];
  const stop = async () => {
    await Promise.all(
      children.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        return exited.then(() => clearTimeout(timer));
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const [i, port] of ports.entries()) {
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          HOST,
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(all[6 + i]),
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '2000',
          '--dir',
          dir,
          '--logfile',
          join(dir, `redis-${port}.log`),
          '--save',
          '',
          '--appendonly',
          'no',
          '--repl-diskless-sync-delay',
          '0',
        ],
        { stdio: 'ignore' },
      );
      child.once('error', () => {}); // reported below: the server never answers
      children.push(child);
    }
    for (const port of ports) {
      for (let i = 0; !(await cli(port, 'PING')).includes('PONG'); i++) {
        if (i > 100) throw new Error(`redis-server on port ${port} did not start`);
        await sleep(50);
      }
    }
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `${HOST}:${p}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    for (const port of ports) {
      for (let i = 0; !(await cli(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'); i++) {
        if (i > 300) throw new Error(`the cluster did not reach cluster_state:ok on port ${port}`);
        await sleep(50);
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    nodes: ports.map((port) => ({ host: HOST, port })),
    pids: children.map((c) => /** @type {number} */ (c.pid)),
    dir,
    stop,
  };
}
