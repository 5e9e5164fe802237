// @portcullis/cli: the `portcullis` command (bin.ts). `run` is the same command without a process,
// for scripts that embed it.
export { type Io, run } from './program.js';
