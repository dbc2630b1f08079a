/**
 * The CLI run in the spec's own process: `main` of src/cli/app.ts (what the bin calls) with stdout and stderr kept in
 * memory (not terminals) and stdin piped (not a terminal): empty unless `stdin` is given, as a bin started with
 * `runBin` has it. For specs of what the CLI says, returns and saves: no bin start (about 0.3 s of CPU time each,
 * 0.6 s for a task with the offline model). What only a process shows (the bin's signal traps, a closed or failed
 * stdout, the exit itself) stays with the specs that start the bin (test/cli-helpers.ts, `runBin`).
 *
 * `main` takes its folder from `--cwd` (else this process's working folder, which a spec in a shared worker must not
 * change): pass `--cwd` for a task. Conversations go where `env.LOOPCTL_DATA_DIR` says (`cliEnv()`'s temp folder).
 */
import { Readable } from 'node:stream';
import { main } from '../../src/cli/app.js';
import { cliEnv } from '../cli-helpers.js';

/** What a run of the CLI gave: its exit code and everything it wrote. */
export interface MainResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI with `argv` and `env` (default `cliEnv()`); `stdin` is the piped input (default none). */
export async function runMain(argv: readonly string[], env = cliEnv(), stdin = ''): Promise<MainResult> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, env, {
    stdout: { isTTY: false, write: (text: string) => (stdout += text) },
    stderr: { isTTY: false, write: (text: string) => (stderr += text) },
    stdin: Object.assign(Readable.from(stdin === '' ? [] : [stdin]), { isTTY: false }),
    exit: (exitCode: number): never => {
      throw new Error(`the CLI asked to exit at once (${exitCode}): a stop, which runMain does not send`);
    },
  });
  return { code, stdout, stderr };
}

export { cliEnv, removeTempFolders, tempFolder } from '../cli-helpers.js';
