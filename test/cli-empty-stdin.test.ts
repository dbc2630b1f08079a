/**
 * Piped stdin that holds no task (docs/cli.md, "exit codes": 2 for no task): the CLI says there is no task and
 * exits 2, and names no conversation, since none is created (a header saying `conversation … (new; loopctl
 * --continue resumes it)` would promise one that `sessions list` never shows). With `--json`, stdout stays empty.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { removeTempFolders, runMain, tempFolder } from './support/cli-main.js';

afterAll(removeTempFolders);

const NO_TASK = 'loopctl: no task: give one as an argument, or pipe one task per line on stdin (see --help)\n';

describe('piped stdin with no task', () => {
  it.each([
    ['loopctl --json -- with empty stdin', ['--json', '--'], ''],
    ['loopctl with blank lines only', [], '\n   \n\t\n'],
  ])('%s: exit 2 with the no-task line alone; no conversation named or created', async (_name, args, input) => {
    const dir = tempFolder();
    const { code, stdout, stderr } = await runMain(['--cwd', dir, ...args], undefined, input);
    console.log(`exit ${code}, stderr: ${JSON.stringify(stderr)}`);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(NO_TASK);
    const list = await runMain(['sessions', 'list', '--json', '--cwd', dir]);
    expect(list).toMatchObject({ code: 0, stdout: '' });
  });
});
