/**
 * The offline model end to end: `npm start` (build if needed, then the bin)
 * on a temp folder, and the built bin for the other task shapes.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, ensureBuilt, removeTempFolders, repoRoot, runBin, spawnCli, tempFolder, waitFor } from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** `npm --prefix <repo> start -- <task>` run from `cwd`, as a user in another folder would (npm sets INIT_CWD = cwd). */
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
    expect(stderr).toMatch(/\[tool\] read_file \{"path":"package.json"\}/);
    expect(stderr).toMatch(/\[loopctl\] completed · 2 turns · 1 tool call/);
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
    expect(stdout).toContain( // npm prints its script banners on stdout first
      '(offline model)\n"TODO" appears on 2 lines in 2 files:\ndocs/notes.md\n  3: TODO write more\nsrc/app.ts\n  2: // TODO: handle errors\n',
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
    const readme = '# Tool\n\nTool does things. It is small.\n\n## Install\n\nRun the installer. Then wait.\n\n```sh\nnpm i\n```\n';
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

  it('streams word by word at its pace, and SIGINT mid-answer cancels it with exit 130', async () => {
    const run = runBin(['hello'], tempFolder(), cliEnv({ LOOPCTL_OFFLINE_DELAY_MS: '40' }));
    await waitFor('the first words', () => run.stdout().includes('(offline model)'));
    run.child.kill('SIGINT');
    const { code, stdout, stderr } = await run.done;
    expect(code).toBe(130);
    expect(stdout.length).toBeGreaterThan(0);
    expect(stdout).not.toContain('--base-url'); // the answer's last line never came
    expect(stderr).toMatch(/\[loopctl\] cancelled \(reason: SIGINT, phase: model_stream\) · 1 turn · 0 tool calls/);
  });

  it('SIGTERM cancels the same way, with exit 143', async () => {
    const run = runBin(['hello'], tempFolder(), cliEnv({ LOOPCTL_OFFLINE_DELAY_MS: '40' }));
    await waitFor('the first words', () => run.stdout().includes('(offline model)'));
    run.child.kill('SIGTERM');
    const { code, stderr } = await run.done;
    expect(code).toBe(143);
    expect(stderr).toMatch(/cancelled \(reason: SIGTERM, phase: model_stream\)/);
  });

  it('--responses without a real endpoint is a usage error', async () => {
    const { code, stderr } = await runBin(['--responses', 'hello'], tempFolder()).done;
    expect(code).toBe(2);
    expect(stderr).toMatch(/--responses needs --base-url or OPENAI_API_KEY/);
  });
});
