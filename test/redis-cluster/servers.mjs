// Private Redis deployments on loopback for the cluster, failover, resharding and Sentinel tests
// (test/redis-cluster) and the cluster benchmark (bench/redis/cluster.mjs): a Redis Cluster of
// real `redis-server` processes created with `redis-cli --cluster create`, or a Sentinel group
// (a primary, its replica and three sentinels). Every process listens on a free port of
// 127.0.0.1, keeps its files in a temporary directory, persists nothing, and is stopped by its PID
// (also when the process that started it exits). Nothing here touches any other Redis.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Every server binds here. */
export const HOST = '127.0.0.1';

/** @param {string} command */
function onPath(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * The binaries these deployments need that are not on the PATH (`redis-server`, `redis-cli`).
 * Sentinels run from `redis-sentinel` when it is installed, else as `redis-server --sentinel`
 * (the same program: Debian ships `redis-sentinel` as a separate package of symlinks).
 * @returns {string[]}
 */
export function missingBinaries() {
  return ['redis-server', 'redis-cli'].filter((b) => !onPath(b));
}

/** How to start a sentinel: `redis-sentinel <conf>` or `redis-server <conf> --sentinel`. */
function sentinelCommand(/** @type {string} */ conf) {
  return onPath('redis-sentinel')
    ? { file: 'redis-sentinel', args: [conf] }
    : { file: 'redis-server', args: [conf, '--sentinel'] };
}

/** Children still running, killed when this process exits however it ends. */
const live = new Set();
process.once('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // gone
    }
  }
});

/** `n` distinct free TCP ports of 127.0.0.1. @param {number} n @returns {Promise<number[]>} */
export async function freePorts(n) {
  const servers = [];
  try {
    // Held open together, so no two are the same.
    for (let i = 0; i < n; i++) {
      const server = createServer();
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, HOST, () => resolve(undefined));
      });
      servers.push(server);
    }
    return servers.map((s) => /** @type {import('node:net').AddressInfo} */ (s.address()).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(() => r(undefined)))));
  }
}

/** @param {string | number} arg */
const bulk = (arg) => {
  const s = String(arg);
  return `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
};

/**
 * Parses one RESP2 reply at `at`; returns [value, next offset] or undefined when incomplete.
 * Errors come back as `Error` values (not thrown), arrays as arrays, bulk strings as strings.
 * @param {string} s @param {number} at @returns {[unknown, number] | undefined}
 */
function parse(s, at) {
  const eol = s.indexOf('\r\n', at);
  if (eol < 0) return undefined;
  const line = s.slice(at + 1, eol);
  switch (s[at]) {
    case '+':
      return [line, eol + 2];
    case '-':
      return [new Error(line), eol + 2];
    case ':':
      return [Number(line), eol + 2];
    case '$': {
      const n = Number(line);
      if (n < 0) return [null, eol + 2];
      const bytes = Buffer.from(s.slice(eol + 2), 'latin1');
      if (bytes.length < n + 2) return undefined;
      return [bytes.subarray(0, n).toString('utf8'), eol + 2 + n + 2];
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return [null, eol + 2];
      const items = [];
      let next = eol + 2;
      for (let i = 0; i < n; i++) {
        const r = parse(s, next);
        if (r === undefined) return undefined;
        items.push(r[0]);
        next = r[1];
      }
      return [items, next];
    }
    default:
      throw new Error(`unexpected RESP reply: ${JSON.stringify(s.slice(at, at + 40))}`);
  }
}

/**
 * Sends one command to 127.0.0.1:`port` on a connection of its own (the admin side channel: it
 * never shares a connection with a client under test) and resolves to the reply; an error reply,
 * a refused connection or no reply within `timeoutMs` rejects.
 * @param {number} port @param {(string | number)[]} args @param {number} [timeoutMs]
 * @returns {Promise<any>}
 */
export function command(port, args, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: HOST, port });
    let data = '';
    const fail = (/** @type {Error} */ error) => {
      socket.destroy();
      reject(new Error(`${args.join(' ')} on :${port}: ${error.message}`));
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`no reply within ${timeoutMs}ms`)));
    socket.on('error', fail);
    socket.on('connect', () => socket.write(`*${args.length}\r\n${args.map(bulk).join('')}`));
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      const reply = parse(data, 0);
      if (reply === undefined) return;
      socket.destroy();
      if (reply[0] instanceof Error) fail(reply[0]);
      else resolve(reply[0]);
    });
  });
}

/** `INFO <section>` as a map of its fields. @param {number} port @param {string} section */
export async function info(port, section) {
  /** @type {Record<string, string>} */
  const fields = {};
  const text = String(await command(port, ['INFO', section]));
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/**
 * Polls `check` every 50 ms until it returns a truthy value (which it resolves to); rejects
 * naming `what` after `ms`. A check that throws counts as not yet.
 * @template T @param {() => Promise<T>} check @param {number} ms @param {string} what
 * @returns {Promise<T>}
 */
export async function until(check, ms, what) {
  const deadline = Date.now() + ms;
  /** @type {unknown} */
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `not within ${ms}ms: ${what}${last instanceof Error ? ` (last error: ${last.message})` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** CRC16-CCITT (XModem), as Redis Cluster hashes keys. @param {Buffer} bytes */
function crc16(bytes) {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/**
 * The cluster slot of `key`: CRC16 of the key, or of its hash tag (the text between the first `{`
 * and the next `}`, when not empty), modulo 16384.
 * @param {string} key
 */
export function keySlot(key) {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(key)) & 16383;
}

/**
 * Spawns a server process and resolves once it answers PING; rejects (after killing it) if it
 * exits or stays silent for 10 s.
 * @param {string} file @param {string[]} args @param {number} port @param {string} log
 * @returns {Promise<import('node:child_process').ChildProcess>}
 */
async function launch(file, args, port, log) {
  // Not detached: a Ctrl-C on the test run reaches the servers too.
  const child = spawn(file, args, { stdio: 'ignore' });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const exited = new Promise((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`${file} on :${port} exited (${signal ?? code}) at start; see ${log}`)),
    );
  });
  exited.catch(() => {}); // an exit after the start is the caller's business
  try {
    await Promise.race([
      until(async () => (await command(port, ['PING'], 500)) === 'PONG', 10_000, `PING :${port}`),
      exited,
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return child;
}

/** SIGKILLs `child` (resuming it first, in case it is stopped) and waits for it to exit. */
function killChild(/** @type {import('node:child_process').ChildProcess} */ child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise((r) => child.once('exit', () => r(undefined)));
  child.kill('SIGCONT');
  child.kill('SIGKILL');
  return exited;
}

/** @param {string} path @param {number} lines */
function tail(path, lines) {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Runs `redis-cli` with `args` (asynchronously: the event loop keeps running); resolves to stdout.
 * @param {string[]} args @param {number} [timeoutMs]
 * @returns {Promise<string>}
 */
export function redisCli(args, timeoutMs = 60_000) {
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      args,
      { timeout: timeoutMs, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error)
          reject(new Error(`redis-cli ${args.join(' ')}: ${error.message}\n${stdout}${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

/**
 * One line of `CLUSTER NODES`.
 * @typedef {{ id: string, port: number, flags: string[], master: boolean, fail: boolean,
 *   masterId: string | undefined, connected: boolean, slots: [number, number][] }} ClusterNodeInfo
 */

/** @param {string} text @returns {ClusterNodeInfo[]} */
function parseNodes(text) {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flagText, masterId, , , , link, ...slotText] = line.trim().split(' ');
      const flags = String(flagText).split(',');
      /** @type {[number, number][]} */
      const slots = [];
      for (const s of slotText) {
        if (s.startsWith('[')) continue; // a slot being migrated or imported
        const [a, b] = s.split('-').map(Number);
        slots.push([Number(a), Number(b ?? a)]);
      }
      return {
        id: String(id),
        port: Number(String(address).split('@')[0]?.split(':').pop()),
        flags,
        master: flags.includes('master'),
        fail: flags.includes('fail') || flags.includes('fail?'),
        masterId: masterId === '-' ? undefined : masterId,
        connected: link === 'connected',
        slots,
      };
    });
}

/**
 * Starts a Redis Cluster of `primaries` primaries with `replicas` replicas each on free ports of
 * 127.0.0.1 (`--cluster-enabled yes`, `--save '' --appendonly no`, node files and logs in a
 * temporary directory), created with `redis-cli --cluster create … --cluster-replicas`, and waits
 * until every node reports `cluster_state:ok`, agrees on the slot map, and every replica is in sync.
 * @param {{ primaries?: number, replicas?: number, nodeTimeoutMs?: number, args?: string[] }} [options]
 */
export async function startCluster({
  primaries = 3,
  replicas = 1,
  nodeTimeoutMs = 1000,
  args = [],
} = {}) {
  const count = primaries * (1 + replicas);
  const dir = mkdtempSync(join(tmpdir(), 'portcullis-cluster-'));
  const allPorts = await freePorts(2 * count);
  const ports = allPorts.slice(0, count);
  /** @type {Map<number, import('node:child_process').ChildProcess>} */
  const children = new Map();
  const logOf = (/** @type {number} */ port) => join(dir, `redis-${port}.log`);
  const argsOf = (/** @type {number} */ port, /** @type {number} */ bus) => [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--cluster-enabled',
    'yes',
    // The bus port is chosen free too (the default, port + 10000, may be taken or out of range).
    '--cluster-port',
    String(bus),
    '--cluster-config-file',
    join(dir, `nodes-${port}.conf`),
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    '--dir',
    dir,
    '--logfile',
    logOf(port),
    '--save',
    '',
    '--appendonly',
    'no',
    // A replica syncs at once (the default waits 5 s for more replicas to share the transfer).
    '--repl-diskless-sync-delay',
    '0',
    ...args,
  ];

  const cluster = {
    dir,
    /** Every node's client port (the first `primaries` were created as primaries). */
    ports,
    /** Where clients start discovering the cluster. */
    seeds: ports.map((port) => ({ host: HOST, port })),
    /** Whether the node on `port` is running. @param {number} port */
    alive(port) {
      const c = children.get(port);
      return c !== undefined && c.exitCode === null && c.signalCode === null;
    },
    /** PID of the node on `port`. @param {number} port */
    pid(port) {
      return children.get(port)?.pid;
    },
    /** The cluster as the first live node (or `port`) sees it. @param {number} [port] */
    async nodes(port) {
      const at = port ?? ports.find((p) => cluster.alive(p));
      if (at === undefined) throw new Error('no live node');
      return parseNodes(String(await command(at, ['CLUSTER', 'NODES'])));
    },
    /** Client port of the primary serving `slot`, as the first live node sees it. @param {number} slot */
    async primaryOf(slot) {
      const nodes = await cluster.nodes();
      const owner = nodes.find((n) => n.master && n.slots.some(([a, b]) => slot >= a && slot <= b));
      if (owner === undefined) throw new Error(`no primary serves slot ${slot}`);
      return owner.port;
    },
    /** Client ports of the live primaries that serve slots, in slot order. */
    async primaries() {
      const nodes = await cluster.nodes();
      return nodes
        .filter((n) => n.master && !n.fail && n.slots.length > 0)
        .sort((a, b) => (a.slots[0]?.[0] ?? 0) - (b.slots[0]?.[0] ?? 0))
        .map((n) => n.port);
    },
    /** Client port of a live replica of the primary on `port`. @param {number} port */
    async replicaOf(port) {
      const nodes = await cluster.nodes();
      const primary = nodes.find((n) => n.port === port);
      const replica = nodes.find((n) => n.masterId === primary?.id && cluster.alive(n.port));
      if (replica === undefined) throw new Error(`no live replica of :${port}`);
      return replica.port;
    },
    /** Node id of the node on `port`. @param {number} port */
    async idOf(port) {
      return String(await command(port, ['CLUSTER', 'MYID']));
    },
    /** SIGKILL, and waits for the exit. @param {number} port */
    async kill(port) {
      const c = children.get(port);
      if (c) await killChild(c);
    },
    /** SIGSTOP: its connections stay open and nothing answers. @param {number} port */
    pause(port) {
      children.get(port)?.kill('SIGSTOP');
    },
    /** SIGCONT. @param {number} port */
    resume(port) {
      children.get(port)?.kill('SIGCONT');
    },
    /**
     * Waits until every live node reports `cluster_state:ok`, all live nodes agree on which live
     * primary serves each slot (all 16384 covered) and on which live node replicates which, and
     * every live replica of a live primary has its replication link up.
     * @param {number} [ms]
     */
    async waitHealthy(ms = 30_000) {
      await until(
        async () => {
          const livePorts = ports.filter((p) => cluster.alive(p));
          const views = await Promise.all(
            livePorts.map(async (p) => ({
              port: p,
              state: await clusterInfo(p),
              nodes: await cluster.nodes(p),
            })),
          );
          const signatures = new Set();
          for (const v of views) {
            if (v.state['cluster_state'] !== 'ok') return false;
            const owners = v.nodes
              .filter((n) => n.master && n.slots.length > 0)
              .sort((a, b) => (a.slots[0]?.[0] ?? 0) - (b.slots[0]?.[0] ?? 0));
            if (owners.some((n) => n.fail || !cluster.alive(n.port))) return false;
            const covered = owners.reduce(
              (sum, n) => sum + n.slots.reduce((s, [a, b]) => s + b - a + 1, 0),
              0,
            );
            if (covered !== 16384) return false;
            if (v.nodes.some((n) => cluster.alive(n.port) && n.fail)) return false;
            // Who serves which slots, and which live node replicates which.
            const portOf = (/** @type {string | undefined} */ id) =>
              v.nodes.find((n) => n.id === id)?.port;
            const roles = v.nodes
              .filter((n) => cluster.alive(n.port))
              .map((n) => `${n.port}<${n.master ? '' : portOf(n.masterId)}`)
              .sort();
            signatures.add(
              `${owners.map((n) => `${n.port}:${JSON.stringify(n.slots)}`).join(' ')} ${roles.join(' ')}`,
            );
          }
          if (signatures.size !== 1) return false;
          for (const v of views) {
            const me = v.nodes.find((n) => n.flags.includes('myself'));
            if (me === undefined || me.master) continue;
            const primary = v.nodes.find((n) => n.id === me.masterId);
            if (primary === undefined || !cluster.alive(primary.port)) continue;
            const replication = await info(v.port, 'replication');
            if (replication['master_link_status'] !== 'up') return false;
          }
          return true;
        },
        ms,
        'a healthy cluster (cluster_state:ok on every node, one slot map, replicas in sync)',
      );
    },
    /** The last lines of every node's log (for a failure message). */
    logs(lines = 15) {
      return ports.map((p) => `--- redis-${p}.log\n${tail(logOf(p), lines)}`).join('\n');
    },
    /** Kills every node by its PID and removes the directory. */
    async stop() {
      await Promise.all([...children.values()].map(killChild));
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    await Promise.all(
      ports.map(async (port, i) => {
        const bus = /** @type {number} */ (allPorts[count + i]);
        children.set(port, await launch('redis-server', argsOf(port, bus), port, logOf(port)));
      }),
    );
    await redisCli([
      '--cluster',
      'create',
      ...ports.map((p) => `${HOST}:${p}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await cluster.waitHealthy();
  } catch (error) {
    const logs = cluster.logs();
    await cluster.stop();
    throw new Error(`${/** @type {Error} */ (error).message}\n${logs}`);
  }
  return cluster;
}

/** `CLUSTER INFO` as a map. @param {number} port */
async function clusterInfo(port) {
  /** @type {Record<string, string>} */
  const fields = {};
  for (const line of String(await command(port, ['CLUSTER', 'INFO'])).split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/**
 * Starts a Sentinel group on free ports of 127.0.0.1: a primary, one replica, and three sentinels
 * monitoring the primary as `name` (quorum 2, `down-after-milliseconds` = `downAfterMs`); resolves
 * once every sentinel knows the replica and the other sentinels.
 * @param {{ name?: string, downAfterMs?: number, failoverTimeoutMs?: number }} [options]
 */
export async function startSentinelGroup({
  name = 'portcullis',
  downAfterMs = 1000,
  failoverTimeoutMs = 10_000,
} = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'portcullis-sentinel-'));
  const [primaryPort, replicaPort, ...sentinelPorts] = /** @type {number[]} */ (await freePorts(5));
  const servers = [/** @type {number} */ (primaryPort), /** @type {number} */ (replicaPort)];
  /** @type {Map<number, import('node:child_process').ChildProcess>} */
  const children = new Map();
  const logOf = (/** @type {number} */ port) => join(dir, `redis-${port}.log`);
  const serverArgs = (/** @type {number} */ port) => [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--dir',
    dir,
    '--logfile',
    logOf(port),
    '--save',
    '',
    '--appendonly',
    'no',
    '--repl-diskless-sync-delay',
    '0',
  ];

  const group = {
    dir,
    name,
    /** The sentinels, as ioredis' `sentinels` option takes them. */
    sentinels: sentinelPorts.map((port) => ({ host: HOST, port })),
    sentinelPorts,
    /** The two data servers (the first started as the primary). */
    servers,
    /** @param {number} port */
    alive(port) {
      const c = children.get(port);
      return c !== undefined && c.exitCode === null && c.signalCode === null;
    },
    /** The primary's port according to the first sentinel that answers. */
    async primary() {
      for (const s of sentinelPorts) {
        try {
          const [, port] = await command(s, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]);
          return Number(port);
        } catch {
          // try the next sentinel
        }
      }
      throw new Error('no sentinel answers');
    },
    /** @param {number} port */
    async kill(port) {
      const c = children.get(port);
      if (c) await killChild(c);
    },
    /** @param {number} port */
    pause(port) {
      children.get(port)?.kill('SIGSTOP');
    },
    /** @param {number} port */
    resume(port) {
      children.get(port)?.kill('SIGCONT');
    },
    logs(lines = 15) {
      return [...children.keys()]
        .map((p) => `--- redis-${p}.log\n${tail(logOf(p), lines)}`)
        .join('\n');
    },
    async stop() {
      await Promise.all([...children.values()].map(killChild));
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    children.set(
      /** @type {number} */ (primaryPort),
      await launch(
        'redis-server',
        serverArgs(/** @type {number} */ (primaryPort)),
        /** @type {number} */ (primaryPort),
        logOf(/** @type {number} */ (primaryPort)),
      ),
    );
    children.set(
      /** @type {number} */ (replicaPort),
      await launch(
        'redis-server',
        [
          ...serverArgs(/** @type {number} */ (replicaPort)),
          '--replicaof',
          HOST,
          String(primaryPort),
        ],
        /** @type {number} */ (replicaPort),
        logOf(/** @type {number} */ (replicaPort)),
      ),
    );
    await until(
      async () =>
        (await info(/** @type {number} */ (replicaPort), 'replication'))['master_link_status'] ===
        'up',
      10_000,
      'the replica in sync',
    );
    await Promise.all(
      sentinelPorts.map(async (port) => {
        // A sentinel rewrites its configuration file, so each gets a writable one of its own.
        const conf = join(dir, `sentinel-${port}.conf`);
        writeFileSync(
          conf,
          [
            `port ${port}`,
            `bind ${HOST}`,
            `dir ${dir}`,
            `logfile ${logOf(port)}`,
            `sentinel monitor ${name} ${HOST} ${primaryPort} 2`,
            `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
            `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
            `sentinel parallel-syncs ${name} 1`,
            '',
          ].join('\n'),
        );
        const { file, args } = sentinelCommand(conf);
        children.set(port, await launch(file, args, port, logOf(port)));
      }),
    );
    await until(
      async () => {
        for (const s of sentinelPorts) {
          const [primary] = await command(s, ['SENTINEL', 'MASTERS']);
          const fields = Object.fromEntries(
            /** @type {string[]} */ (primary).flatMap((v, i, a) => (i % 2 ? [] : [[v, a[i + 1]]])),
          );
          if (Number(fields['num-slaves']) < 1 || Number(fields['num-other-sentinels']) < 2)
            return false;
        }
        return true;
      },
      15_000,
      'three sentinels that know the replica and each other',
    );
  } catch (error) {
    const logs = group.logs();
    await group.stop();
    throw new Error(`${/** @type {Error} */ (error).message}\n${logs}`);
  }
  return group;
}
