#!/usr/bin/env node
/**
 * The `loopctl` bin: `loopctl [options] "task"`, or `loopctl [--interactive]`
 * for the prompt loop (see `loopctl --help` and
 * ./app.ts). Runs from the build (`dist/cli/main.js`), without tsx.
 */
import { main } from './app.js';

const flushed = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => stream.write('', () => resolve()));

const code = await main(process.argv.slice(2), process.env, {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  exit: (n) => process.exit(n),
});
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
