#!/usr/bin/env node
// The `portcullis` executable: the command on this process's arguments and streams.
import { run } from './program.js';

/** Resolves once everything written to `stream` so far is out (a pipe may be asynchronous). */
const flushed = (stream: NodeJS.WriteStream) =>
  new Promise<void>((resolve) => stream.write('', () => resolve()));

run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  async (code) => {
    // Exit as soon as the output is out: ioredis leaves the connect-timeout timer of a refused
    // socket running (2 s), and the command has nothing left to do.
    await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`portcullis: unexpected error: ${(error as Error)?.stack ?? error}\n`);
    process.exitCode = 1;
  },
);
