/**
 * Piped stdin that holds no task (docs/cli.md, "exit codes": 2 for no task): the built bin says there is no task and
 * exits 2, and names no conversation, since none is created (a header saying `conversation … (new; loopctl
 * --continue resumes it)` would promise one that `sessions list` never shows). With `--json`, stdout stays empty.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, ensureBuilt, removeTempFolders, runBin, tempFolder } from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const NO_TASK = 'loopctl: no task: give one as an argument, or pipe one task per line on stdin (see --help)\n';

describe('piped stdin with no task', () => {
  it.each([
    ['loopctl --json -- with empty stdin', ['--json', '--'], ''],
    ['loopctl with blank lines only', [], '\n   \n\t\n'],
  ])(
    '%s: exit 2 with the no-task line alone; no conversation named or created',
    async (_name, args, input) => {
      const dir = tempFolder();
      const env = cliEnv();
      const cli = runBin(args, dir, env, 'pipe');
      cli.child.stdin!.end(input);
      const { code, stdout, stderr } = await cli.done;
      console.log(`exit ${code}, stderr: ${JSON.stringify(stderr)}`);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toBe(NO_TASK);
      const list = await runBin(['sessions', 'list', '--json'], dir, env).done;
      expect(list.stdout).toBe('');
    },
    60_000,
  );
});
