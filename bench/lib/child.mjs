// Pieces shared by the benchmarks that run each server in a child process and load it from the
// parent (bench/http, bench/ws): talking to a child over IPC, stopping it, pinning, the machine's
// busy time, the median. See bench/README.md for the method they serve.
import { execFileSync, fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Sends `message` (unless undefined) and resolves to field `reply` of the first reply holding it. */
export function request(child, message, reply) {
  return new Promise((resolve, reject) => {
    const onExit = (code) => reject(new Error(`server exited (${code})`));
    const onMessage = (m) => {
      if (m && reply in m) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m[reply]);
      }
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
    if (message !== undefined) child.send(message);
  });
}

/**
 * Starts `script args…` as a child with an IPC channel. Pinned, it runs on core 1 (`taskset`) and
 * never shares a core with the load generator, which {@link pinSelf} put on core 0.
 */
export function startChild(script, args, { pin = false, execArgv = [] } = {}) {
  const stdio = ['ignore', 'inherit', 'inherit', 'ipc'];
  return pin
    ? spawn('taskset', ['-c', '1', process.execPath, ...execArgv, script, ...args], { stdio })
    : fork(script, args, { execArgv, stdio });
}

/**
 * The child side of the protocol: answers `'cpu'` with its `process.cpuUsage()`, exits on `'exit'`
 * (through process.exit, so that --cpu-prof writes its profile) or when the parent goes away.
 */
export function serveCpu() {
  process.on('message', (m) => {
    if (m === 'cpu') process.send({ cpu: process.cpuUsage() });
    else if (m === 'exit') process.exit(0);
  });
  process.on('disconnect', () => process.exit(0));
}

/** Asks a child to exit; kills it after 5 s. */
export async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.send('exit');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** User + system µs of a `process.cpuUsage()` result. */
export const cpuMicros = (u) => u.user + u.system;

/**
 * CPU time the whole machine spent busy (or had stolen by the hypervisor), in µs, from
 * /proc/stat; undefined where there is no /proc. Minus the load generator and the server, it is
 * what other programs took during a run.
 */
export function machineBusyMicros() {
  try {
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
      .slice(0, 200)
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return (user + nice + system + irq + softirq + steal) * (1e6 / 100); // USER_HZ = 100
  } catch {
    return undefined;
  }
}

/** Pins this process (all its threads) to core 0; false when that is off or not possible here. */
export function pinSelf(disabled) {
  if (disabled || process.platform !== 'linux' || availableParallelism() < 2) return false;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
