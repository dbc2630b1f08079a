/**
 * The offline model end to end: `npm start` (build if needed, then the bin)
 * on a temp folder, and the built bin for the other task shapes.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  cliEnv,
  ensureBuilt,
  removeTempFolders,
  repoRoot,
  runBin,
  spawnCli,
  tempFolder,
  waitFor,
} from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/**
 * `npm --prefix <repo> start -- <task>` run from `cwd`, as a user in another folder would (npm sets INIT_CWD = cwd).
 */
const npmStart = (cwd: string, ...args: string[]) =>
  spawnCli(NPM, ['--prefix', repoRoot, 'start', '--', ...args], { cwd, env: cliEnv() });

const PACKAGE_JSON = `{
  "name": "sample",
  "version": "1.0.0",
  "private": true,
  "scripts": {
    "test": "echo ok"
  }
}
`; // 8 lines

describe('npm start with the offline model', () => {
  it('"how many lines in package.json" prints the right number for the folder npm was run from', async () => {
    const dir = tempFolder({ 'package.json': PACKAGE_JSON });
    const { code, stdout, stderr } = await npmStart(dir, 'how many lines in package.json').done;
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('(offline model)\npackage.json has 8 lines.\n');
    expect(stderr).toContain(`folder ${dir}`);
    expect(stderr).toMatch(/\[tool\] read_file path: package\.json · /);
    expect(stderr).toMatch(/\[loopctl\] completed · 2 turns · 1 tool call/);
  }, 120_000);

  it('a relative --cwd is taken from the folder npm was run from, not the package folder', async () => {
    const dir = tempFolder({ 'sub/x.txt': 'one\ntwo\nthree\n' });
    const { code, stdout, stderr } = await npmStart(dir, '--cwd', 'sub', 'how many lines in x.txt').done;
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(`folder ${path.join(dir, 'sub')} `);
    expect(stdout).toContain('(offline model)\nx.txt has 3 lines.\n');
  }, 120_000);

  it('"find TODO" lists the right files and lines', async () => {
    const dir = tempFolder({
      'src/app.ts': 'export const a = 1;\n// TODO: handle errors\n',
      'docs/notes.md': '# Notes\n\nTODO write more\n',
      'clean.txt': 'nothing to do here\n',
      'node_modules/dep/index.js': '// TODO not ours\n',
    });
    const { code, stdout } = await npmStart(dir, 'find TODO').done;
    expect(code).toBe(0);
    expect(stdout).toContain(
      // npm prints its script banners on stdout first
      '(offline model)\n"TODO" appears on 2 lines in 2 files:\n' +
        'docs/notes.md\n  3: TODO write more\nsrc/app.ts\n  2: // TODO: handle errors\n',
    );
  }, 120_000);
});

describe('the offline model through the built bin', () => {
  it('lists files of a kind', async () => {
    const dir = tempFolder({ 'a.ts': '', 'lib/b.ts': '', 'c.js': '', 'README.md': '' });
    const { code, stdout } = await runBin(['list the .ts files'], dir).done;
    expect(code).toBe(0);
    expect(stdout).toBe('(offline model)\nI found 2 .ts files:\n- a.ts\n- lib/b.ts\n');
  });

  it('summarises a file into a new file (atomically written), and only prints it when read-only', async () => {
    const readme =
      '# Tool\n\nTool does things. It is small.\n\n## Install\n\nRun the installer. Then wait.\n\n```sh\nnpm i\n```\n';
    const dir = tempFolder({ 'README.md': readme });
    const summary = '# Summary of README.md\n\n- **Tool**: Tool does things.\n- **Install**: Run the installer.\n';
    const written = await runBin(['summarise README.md into SUMMARY.md'], dir).done;
    expect(written.code).toBe(0);
    expect(readFileSync(path.join(dir, 'SUMMARY.md'), 'utf8')).toBe(summary);
    expect(written.stdout).toContain('I wrote a summary of README.md to SUMMARY.md');
    expect(written.stderr).toMatch(/\[tool\] write_file .* · ok/);

    const other = tempFolder({ 'README.md': readme });
    const readOnly = await runBin(['--read-only', 'summarise README.md into SUMMARY.md'], other).done;
    expect(readOnly.code).toBe(0);
    expect(readOnly.stdout).toContain('read-only');
    expect(readOnly.stdout).toContain(summary);
    expect(existsSync(path.join(other, 'SUMMARY.md'))).toBe(false);
  });

  it('answers what it can do for anything else, saying it is the offline model', async () => {
    const { code, stdout } = await runBin(['write me a poem'], tempFolder()).done;
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toBe('(offline model)');
    expect(stdout).toContain('how many lines in package.json');
    expect(stdout).toContain('OPENAI_API_KEY');
  });

  /** The NDJSON events a `--json` child wrote so far. */
  const events = (stdout: string) =>
    stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string });
  const deltas = (stdout: string) => events(stdout).filter((e) => e.type === 'text_delta').length;

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('streams word by word at its pace; %s mid-answer cancels it with exit %i', async (signal, exitCode) => {
    const run = runBin(['--json', 'hello'], tempFolder(), cliEnv({ LOOPCTL_OFFLINE_DELAY_MS: '40' }));
    await waitFor('the first words', () => deltas(run.stdout()) >= 3);
    run.child.kill(signal);
    const { code, stdout, stderr } = await run.done;
    expect(code).toBe(exitCode);
    const last = events(stdout).at(-1);
    expect(last).toMatchObject({ type: 'run_cancelled', reason: signal, phase: 'model_stream' });
    expect(stdout).not.toContain('--base-url'); // the answer's last line never came
    expect(stderr).toContain(`[loopctl] cancelled (reason: ${signal}, phase: model_stream) · 1 turn · 0 tool calls`);
  });

  it('stdout closed early (piped into `head -1`): no EPIPE crash, the run is cancelled quietly, exit 141', async () => {
    const child = spawn(process.execPath, [BIN, '--json', 'hello'], {
      cwd: tempFolder(),
      env: cliEnv({ LOOPCTL_OFFLINE_DELAY_MS: '40' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | string | null>((resolve) =>
      child.on('close', (code, signal) => resolve(code ?? signal)),
    );
    await new Promise((resolve) => child.stdout.once('data', resolve)); // the events have started
    child.stdout.destroy(); // the reader goes away: the CLI's next write fails with EPIPE
    expect(await exited).toBe(141);
    expect(stderr).not.toMatch(/EPIPE|Unhandled|\n\s+at /);
    expect(stderr).not.toMatch(/\[loopctl\] (completed|cancelled|failed)/); // quiet: no stop line either
  });

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)(
    '%s while the CLI is still loading: "cancelled before the run started", exit %i',
    async (signal, exitCode) => {
      // A loader hook holds the import of the CLI (the bin's chunk dist/bin/app-<hash>.js, which the bin imports
      // once it has trapped the stops) until the test says go: the signal lands after the bin trapped it and before
      // the run exists.
      const dir = tempFolder({
        'hooks.mjs': `import { existsSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
const here = (name) => fileURLToPath(new URL(name, import.meta.url));
export async function load(url, context, next) {
  if (/\\/dist\\/bin\\/app-\\w+\\.js$/.test(url)) {
    writeFileSync(here('loading'), '');
    while (!existsSync(here('go'))) await sleep(10);
  }
  return next(url, context);
}
`,
        'register.mjs': `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`,
      });
      const run = spawnCli(
        process.execPath,
        ['--import', pathToFileURL(path.join(dir, 'register.mjs')).href, BIN, 'hello'],
        { cwd: dir },
      );
      await waitFor('the CLI to be loading', () => existsSync(path.join(dir, 'loading')));
      run.child.kill(signal);
      writeFileSync(path.join(dir, 'go'), '');
      const { code, stdout, stderr } = await run.done;
      expect(code, stderr).toBe(exitCode);
      expect(stderr).toBe(`[loopctl] cancelled (reason: ${signal}) before the run started\n`);
      expect(stdout).toBe('');
    },
  );

  it('--responses without a real endpoint is a usage error', async () => {
    const { code, stderr } = await runBin(['--responses', 'hello'], tempFolder()).done;
    expect(code).toBe(2);
    expect(stderr).toMatch(/--responses needs --base-url or OPENAI_API_KEY/);
  });
});
