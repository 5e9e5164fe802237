// The `portcullis` command: commander parses, this file acts and says what it did. Exit codes: 0
// done, 1 Redis failed (the reason and the URL without its password), 2 bad usage (with the usage).
import type { AccessRule, Decision, LockoutInfo } from '@portcullis/core';
import { withoutUndefined } from '@portcullis/core/adapter';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { type Connection, open } from './connection.js';
import { DURATION_FORMS, formatDuration, parseDuration } from './duration.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';
import { printable, table } from './table.js';
import { VERSION } from './version.js';

/** Where the command writes: text with its own newlines. */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
}

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
const USAGE = 'portcullis.usage';

/** The options every command takes. */
interface TargetOptions {
  redis: string;
  cluster?: true;
  prefix: string;
  name: string;
  json?: true;
}

/** Redis failed under a command: exit 1. */
class RedisFailure extends Error {
  constructor(shown: string, reason: string) {
    const hint = /^(MOVED|ASK) |CLUSTERDOWN/.test(reason)
      ? ' (this Redis is a Cluster node: add --cluster)'
      : '';
    super(`error: Redis failed at ${shown}: ${reason}${hint}`);
  }
}

/** The command-line flag behind each option a Portcullis config error can name. */
const FLAGS: Record<string, string> = {
  ms: '--for',
  limit: '--limit',
  scope: '--scope',
  prefix: '--prefix',
  name: '--name',
  reason: '--reason',
};

function isConfigError(error: unknown): error is Error & { code: string; option?: unknown } {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('ERR_PORTCULLIS_');
}

function withTarget(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--redis <url>',
        'the Redis: redis://[user:password@]host:port[/db], rediss:// for TLS',
      )
        .default(DEFAULT_REDIS_URL)
        .env('PORTCULLIS_REDIS_URL'),
    )
    .option('--cluster', 'the URL names one node of a Redis Cluster (like redis-cli -c)')
    .option('--prefix <prefix>', "the RedisStore's prefix", 'portcullis:')
    .option('--name <name>', "the failure limiter's name", 'auth')
    .option('--json', 'JSON output: one object per line');
}

function wholeNumber(text: string): number {
  if (!/^\d{1,7}$/.test(text)) throw new InvalidArgumentError('Expected a whole number.');
  return Number(text);
}

/** Writes `error: message` and the command's usage, and exits 2 (through `exitOverride`). */
function usage(command: Command, message: string): never {
  return command.error(`error: ${message}`, { exitCode: 2, code: USAGE });
}

/**
 * Runs `act` on the limiter `options` name, and turns what went wrong into the exit codes: a
 * config error (a bad prefix, name, scope, limit or duration) is bad usage, a Redis failure is
 * Redis's. `given` maps each flag to the text the user typed, for the messages.
 */
async function onLimiter<T>(
  command: Command,
  options: TargetOptions,
  given: Record<string, string>,
  act: (connection: Connection) => T | Promise<T>,
): Promise<T> {
  let target: RedisTarget;
  try {
    target = parseRedisUrl(options.redis);
  } catch (error) {
    return usage(command, (error as Error).message);
  }
  const configError = (error: unknown): never => {
    if (!isConfigError(error)) throw error;
    const flag = typeof error.option === 'string' ? FLAGS[error.option] : undefined;
    if (flag === undefined) return usage(command, error.message);
    const typed = { '--prefix': options.prefix, '--name': options.name, ...given }[flag];
    const shown = typed === undefined ? '' : typed === '' ? " ''" : ` ${printable(typed)}`;
    return usage(command, `${flag}${shown}: ${error.message}`);
  };
  let connection: Connection;
  try {
    connection = open({
      target,
      cluster: options.cluster === true,
      prefix: options.prefix,
      name: options.name,
    });
  } catch (error) {
    return configError(error);
  }
  try {
    let result: T;
    try {
      result = await act(connection);
    } catch (error) {
      if (isConfigError(error)) return configError(error);
      // Whatever else failed under a command failed in Redis (an access list's calls reject
      // with Redis's own error rather than answering through onError).
      const failed = connection.failure();
      throw new RedisFailure(
        target.shown,
        failed ?? (error instanceof Error ? error.message : String(error)),
      );
    }
    await connection.settled();
    const failed = connection.failure();
    if (failed !== undefined) throw new RedisFailure(target.shown, failed);
    return result;
  } finally {
    connection.close();
  }
}

function where(options: TargetOptions, scope?: string): string {
  const parts = [`limiter ${printable(options.name)}`, `prefix ${printable(options.prefix)}`];
  if (scope !== undefined) parts.push(`scope ${printable(scope)}`);
  return parts.join(', ');
}

function subjectOf(command: Command, subject: string): { key: string; exempt: false } {
  if (subject.trim() === '')
    usage(command, '<subject> is empty: give an IP address, or a key as lockouts shows it');
  // Never exempt: a lockout of 127.0.0.1 exists only for a loopback address that came through a
  // proxy (a direct local client is exempt and never stored), and that one must be reachable.
  return { key: subject, exempt: false };
}

/** Writes one line of output. */
function writeLine(io: Io, text: string): void {
  io.stdout(`${text}\n`);
}

function lockoutLine(l: LockoutInfo): string {
  return JSON.stringify({
    scope: l.scope,
    key: l.key,
    layer: l.layer,
    until: l.until,
    retryAfterMs: l.retryAfterMs,
  });
}

/** The program without its commands: the help, the version, where it writes. */
function root(io: Io): Command {
  return new Command('portcullis')
    .usage('<command> [options]')
    .description(
      'See and act on the lockouts of a Portcullis failure limiter, and on its access lists, whose store is Redis (RedisStore).',
    )
    .version(VERSION, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show this help')
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError()
    .exitOverride()
    .addHelpText(
      'after',
      [
        '',
        'Exit codes: 0 done, 1 Redis failed (the reason is printed), 2 bad usage.',
        '',
        'Examples:',
        '  portcullis lockouts --redis redis://:secret@10.0.0.5:6379',
        '  portcullis unlock 203.0.113.7',
        '  portcullis ban 203.0.113.7 --for 1h --scope device-token',
        "  portcullis deny 198.51.100.0/24 --reason 'scraping' --for 7d",
        '  portcullis allow account:ops',
        '  portcullis access --json',
      ].join('\n'),
    );
}

/** `portcullis lockouts`: the lockouts in force, as a table or JSON lines. */
function addLockouts(program: Command, io: Io): void {
  withTarget(
    program
      .command('lockouts')
      .description('list the lockouts in force, soonest end first')
      .option('--scope <scope>', 'only this scope (default: every scope)')
      .option('--limit <n>', 'list at most n lockouts (1 to 100000)', wholeNumber, 1000),
  ).action(async (options: TargetOptions & { scope?: string; limit: number }, command: Command) => {
    const given = { '--limit': String(options.limit), '--scope': options.scope ?? '' };
    const found = await onLimiter(command, options, given, ({ limiter }) =>
      limiter.lockouts(withoutUndefined({ limit: options.limit, scope: options.scope })),
    );
    if (options.json) for (const l of found) writeLine(io, lockoutLine(l));
    else if (found.length === 0)
      writeLine(io, `no lockouts in force (${where(options, options.scope)})`);
    else
      for (const line of table(
        ['SCOPE', 'KEY', 'LAYER', 'ENDS IN', 'UNTIL'],
        found.map((l) => [
          printable(l.scope),
          printable(l.key),
          l.layer,
          formatDuration(l.retryAfterMs),
          new Date(l.until).toISOString(),
        ]),
      ))
        writeLine(io, line);
    if (found.length === options.limit)
      io.stderr(`note: the ${found.length} soonest to end; there may be more (raise --limit)\n`);
  });
}

/** `portcullis unlock <subject>`: lifts a lockout and forgets the failures. */
function addUnlock(program: Command, io: Io): void {
  withTarget(
    program
      .command('unlock')
      .description("lift a client's lockout (earned or banned) and forget its failures")
      .argument('<subject>', 'the client: an IP address, or a key as lockouts shows it')
      .option('--scope <scope>', 'the scope (credential class)', 'default'),
  ).action(
    async (subject: string, options: TargetOptions & { scope: string }, command: Command) => {
      const who = subjectOf(command, subject);
      const given = { '--scope': options.scope };
      const d: Decision = await onLimiter(command, options, given, ({ limiter }) =>
        limiter.reset(who, options.scope),
      );
      if (options.json)
        writeLine(io, JSON.stringify({ action: 'unlock', scope: options.scope, key: d.key }));
      else writeLine(io, `unlocked ${printable(d.key)} (${where(options, options.scope)})`);
    },
  );
}

/** `portcullis ban <subject> --for <duration>`: a lockout by hand. */
function addBan(program: Command, io: Io): void {
  withTarget(
    program
      .command('ban')
      .description('lock a client out by hand: refused like an earned lockout, listed as layer ban')
      .argument('<subject>', 'the client: an IP address, or a key as lockouts shows it')
      .requiredOption('--for <duration>', `how long: ${DURATION_FORMS}; at most 24d 20h`)
      .option('--scope <scope>', 'the scope (credential class)', 'default'),
  ).action(
    async (
      subject: string,
      options: TargetOptions & { scope: string; for: string },
      command: Command,
    ) => {
      const who = subjectOf(command, subject);
      const ms = parseDuration(options.for);
      if (ms === undefined)
        usage(command, `--for ${printable(options.for)}: expected a duration: ${DURATION_FORMS}`);
      const given = { '--for': options.for, '--scope': options.scope };
      const d: Decision = await onLimiter(command, options, given, ({ limiter }) =>
        limiter.ban(who, { scope: options.scope, ms }),
      );
      if (d.reason !== 'locked') throw new Error(`Redis answered the ban with ${d.reason}`);
      if (options.json)
        writeLine(
          io,
          JSON.stringify({
            action: 'ban',
            scope: options.scope,
            key: d.key,
            ms,
            retryAfterMs: d.retryAfterMs,
          }),
        );
      else
        writeLine(
          io,
          `banned ${printable(d.key)} for ${formatDuration(d.retryAfterMs)} (${where(options, options.scope)})` +
            (d.retryAfterMs > ms ? ': a longer lockout was already in force' : ''),
        );
    },
  );
}

/** The access-list flag every access command takes (the list's name, not the limiter's). */
function withList(command: Command): Command {
  return withTarget(command).option('--list <name>', "the access list's name", 'default');
}

const SUBJECT_HELP =
  'an IP address or CIDR network (203.0.113.7, 10.0.0.0/8), account:<name> or origin:<origin>';

function ruleLine(r: AccessRule): string {
  return JSON.stringify({
    subject: r.subject,
    action: r.action,
    reason: r.reason,
    until: r.until ?? null,
  });
}

/** `portcullis access`: the allow and deny rules in force. */
function addAccess(program: Command, io: Io): void {
  withList(
    program.command('access').description('list the allow and deny rules in force, denies first'),
  ).action(async (options: TargetOptions & { list: string }, command: Command) => {
    const rules = await onLimiter(command, options, { '--list': options.list }, (c) =>
      c.access(options.list).rules(),
    );
    if (options.json) for (const r of rules) writeLine(io, ruleLine(r));
    else if (rules.length === 0)
      writeLine(
        io,
        `no access rules (list ${printable(options.list)}, prefix ${printable(options.prefix)})`,
      );
    else
      for (const line of table(
        ['ACTION', 'SUBJECT', 'REASON', 'ENDS IN'],
        rules.map((r) => [
          r.action,
          printable(r.subject),
          printable(r.reason),
          r.until === undefined ? 'never' : formatDuration(r.until - Date.now()),
        ]),
      ))
        writeLine(io, line);
  });
}

/** `portcullis allow|deny <subject>`: sets a rule (replacing the subject's rule, if any). */
function addRule(program: Command, io: Io, action: 'allow' | 'deny'): void {
  withList(
    program
      .command(action)
      .description(
        action === 'deny'
          ? 'refuse every request of a subject (403 with the reason), in every process'
          : 'let a subject through the rate limits (not the auth lockout), in every process',
      )
      .argument('<subject>', SUBJECT_HELP)
      .option('--reason <text>', 'why: shown in the refusal and the log line')
      .option('--for <duration>', `how long: ${DURATION_FORMS} (default: until removed)`),
  ).action(
    async (
      subject: string,
      options: TargetOptions & { list: string; reason?: string; for?: string },
      command: Command,
    ) => {
      let ms: number | undefined;
      if (options.for !== undefined) {
        ms = parseDuration(options.for);
        if (ms === undefined)
          usage(command, `--for ${printable(options.for)}: expected a duration: ${DURATION_FORMS}`);
      }
      const given = { '--for': options.for ?? '', '--reason': options.reason ?? '' };
      const rule = await onLimiter(command, options, given, (c) =>
        c.access(options.list)[action](subject, withoutUndefined({ reason: options.reason, ms })),
      );
      if (options.json) writeLine(io, ruleLine(rule));
      else
        writeLine(
          io,
          `${action === 'deny' ? 'denied' : 'allowed'} ${printable(rule.subject)}${rule.until === undefined ? '' : ` for ${formatDuration(ms ?? 0)}`} (list ${printable(options.list)})`,
        );
    },
  );
}

/** `portcullis unlist <subject>`: removes the subject's rule. */
function addUnlist(program: Command, io: Io): void {
  withList(
    program
      .command('unlist')
      .description('remove the allow or deny rule of a subject')
      .argument('<subject>', SUBJECT_HELP),
  ).action(async (subject: string, options: TargetOptions & { list: string }, command: Command) => {
    const removed = await onLimiter(command, options, {}, (c) =>
      c.access(options.list).remove(subject),
    );
    if (options.json) writeLine(io, JSON.stringify({ action: 'unlist', subject, removed }));
    else
      writeLine(
        io,
        removed
          ? `removed the rule of ${printable(subject)} (list ${printable(options.list)})`
          : `no rule of ${printable(subject)} was in force (list ${printable(options.list)})`,
      );
  });
}

function build(io: Io): Command {
  const program = root(io);
  addLockouts(program, io);
  addUnlock(program, io);
  addBan(program, io);
  addAccess(program, io);
  addRule(program, io, 'allow');
  addRule(program, io, 'deny');
  addUnlist(program, io);
  return program;
}

/**
 * Runs the `portcullis` command with `argv` (the arguments after the program name) and resolves to
 * its exit code: 0 done, 1 Redis failed, 2 bad usage. Everything is written through `io`.
 */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  const program = build(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof RedisFailure) {
      io.stderr(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
