import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, cliEnv, waitFor } from '../../cli-helpers.js';

/** A `loopctl serve` started from the built bin by {@link startServe}. */
export interface Served {
  /** The server's process (`stdio`: ignored stdin, piped stdout and stderr). */
  readonly child: ChildProcess;
  /** The address it printed, with its token (`http://127.0.0.1:<port>/?token=…`). */
  readonly address: string;
  /** Everything it wrote so far, as text; read it later for what it writes after the start. */
  readonly io: { stdout: string; stderr: string };
}

/**
 * Starts `loopctl serve <args>` (the built bin, `dist/bin/loopctl.js`) in `cwd` and waits until it prints its
 * address. `env` defaults to {@link cliEnv}'s. @throws when no address is printed within 30 s (the server's output
 * so far in the message).
 */
export async function startServe(
  args: readonly string[],
  options: { readonly cwd: string; readonly env?: NodeJS.ProcessEnv },
): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], {
    cwd: options.cwd,
    env: options.env ?? cliEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (io.stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (io.stderr += d));
  try {
    const address = await waitFor(
      'the address loopctl serve prints',
      () => /http:\/\/\S+\?token=\S+/.exec(io.stdout)?.[0],
    );
    return { child, address, io };
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}; it wrote: ${io.stdout}${io.stderr}`, { cause: err });
  }
}
