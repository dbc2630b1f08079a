#!/usr/bin/env node
/* global process, console, Buffer */
// `npm test`: the four checks of the hermetic tier at the same time, since none needs another's result: the
// typecheck (`tsc --noEmit`, which also checks the type tests test/**/*.test-d.ts), `prettier --check`, `eslint` and
// `vitest run`. Each one's output is printed in one piece when it ends, with its exit status and duration; the run
// fails when any of them fails. Arguments go to vitest (`npm test -- test/foo.test.ts`).
//
// tsc, prettier and eslint keep caches in `.cache/` (gitignored): a second run checks only what changed. A clean
// clone (CI) has none, and then running them in parallel is what keeps the wall time down.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const cache = path.join(root, '.cache');
mkdirSync(cache, { recursive: true });

const checks = [
  // vitest first: it takes longest.
  { name: 'vitest', command: 'vitest', args: ['run', ...process.argv.slice(2)] },
  // TypeScript 7 (the native compiler, devDependency `typescript-7`): the same checks as TypeScript 5.9 in a third of
  // the CPU time. 5.9 (`typescript`) stays for what needs its JavaScript API (typescript-eslint) and emits the build.
  {
    name: 'tsc',
    command: process.execPath,
    args: [
      path.join(root, 'node_modules', 'typescript-7', 'bin', 'tsc'),
      ...['--noEmit', '-p', '.', '--incremental', '--tsBuildInfoFile', path.join(cache, 'tsc.tsbuildinfo')],
    ],
  },
  {
    name: 'eslint',
    command: 'eslint',
    args: ['.', '--cache', '--cache-strategy', 'content', '--cache-location', path.join(cache, 'eslint/')],
  },
  {
    name: 'prettier',
    command: 'prettier',
    args: ['--check', '.', '--cache', '--cache-strategy', 'content', '--cache-location', path.join(cache, 'prettier')],
  },
];

const env = { ...process.env, PATH: `${path.join(root, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH}` };
// Colours as on a terminal when npm test runs on one (the output is buffered, so the tools cannot tell).
if (process.stdout.isTTY && env.FORCE_COLOR === undefined && env.NO_COLOR === undefined) env.FORCE_COLOR = '1';

const started = Date.now();
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

/** Runs one check; resolves with true when it exits with 0. */
function run({ name, command, args }) {
  const since = Date.now();
  const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = [];
  child.stdout.on('data', (chunk) => output.push(chunk));
  child.stderr.on('data', (chunk) => output.push(chunk));
  return new Promise((resolve) => {
    let failedToStart = false;
    child.on('error', (error) => {
      failedToStart = true;
      output.push(Buffer.from(`cannot start ${command}: ${error.message}\n`));
    });
    child.on('close', (code, signal) => {
      const ok = code === 0 && !failedToStart;
      const status = ok ? 'passed' : `FAILED (${signal ? `killed by ${signal}` : `exit ${code}`})`;
      process.stdout.write(`\n── ${name}: ${status} in ${seconds(since)} ──\n`);
      process.stdout.write(Buffer.concat(output));
      resolve(ok);
    });
  });
}

const results = await Promise.all(checks.map(run));
const failed = checks.filter((_, i) => !results[i]).map((check) => check.name);
console.log(
  `\nnpm test: ${failed.length === 0 ? 'all passed' : `${failed.join(', ')} failed`} (${checks.length} checks in ` +
    `${seconds(started)})`,
);
process.exitCode = failed.length === 0 ? 0 : 1;
