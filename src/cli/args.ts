import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../defaults.js';

/** A command line the CLI refuses; `main` prints the message and exits with code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The parsed command line of `loopctl`. */
export interface CliOptions {
  /** The task; '' in interactive mode when none was given (the prompt asks for one). */
  readonly task: string;
  /** The prompt loop on one conversation (`--interactive`, or no task on a TTY). */
  readonly interactive: boolean;
  /** `--confirm`: write_file and run_shell ask for approval first. */
  readonly confirm: boolean;
  /** Absolute path of the working folder. */
  readonly cwd: string;
  /** Model name; undefined = the default of the chosen model (see `selectModel`). */
  readonly model: string | undefined;
  readonly baseURL: string | undefined;
  readonly apiKey: string | undefined;
  readonly responses: boolean;
  readonly allowShell: boolean;
  readonly readOnly: boolean;
  /** Turns before the run fails with `max_turns` (default `DEFAULTS.maxTurns`). */
  readonly maxTurns: number;
}

/** What {@link parseCli} found: a run to do, or help / version to print. */
export type CliCommand = { readonly kind: 'run'; readonly options: CliOptions } | { readonly kind: 'help' } | { readonly kind: 'version' };

/** The `--help` text. */
export const HELP = `Usage: loopctl [options] "task"
       loopctl [options] [--interactive] ["first task"]

Runs one agent on the current folder (with npm start: the folder you ran it
from), streams its answer, then exits. Ctrl-C stops the run cleanly (exit 130);
a second Ctrl-C exits at once.

Interactive mode (no task on a terminal, or --interactive, which also reads
piped stdin): a prompt loop on one conversation; only completed runs are
kept in it. Each line starts a run; a line typed while a run is going steers
it (shown [queued], then [injected] when the next turn takes it; steering the
run did not take is [kept for next run]). /cancel stops the run, /drop
forgets kept steering, /quit exits 0, /help lists these. Ctrl-C cancels the
run and the prompt comes back (at an idle prompt it cancels nothing); Ctrl-C
twice within 2 s exits (130). End of input waits for the run, then exits 0.

Model: with OPENAI_API_KEY or --base-url, an OpenAI-compatible server
(Chat Completions; --responses for the Responses API). With neither, the
built-in offline model: a few rules, no AI, served on 127.0.0.1. It can list
files of a kind, count the lines of a file, find a pattern such as TODO, and
summarise a file into a new one.

Options:
  --model <name>      model name (default gpt-4o-mini; offline: loopctl-offline)
  --base-url <url>    OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1
  --api-key <key>     API key (default: OPENAI_API_KEY)
  --responses         use the Responses API instead of Chat Completions
  --allow-shell       give the agent a shell tool (NOT sandboxed: it runs
                      commands as you, anywhere)
  --read-only         no write_file tool
  --max-turns <n>     turns before giving up (default ${DEFAULTS.maxTurns})
  -i, --interactive   the prompt loop above, even with piped stdin
  --confirm           ask before each write_file and run_shell call
                      ("allow? [y/N]", answered on stdin; anything but y/yes
                      refuses, and the model gets the refusal as a tool error)
  --cwd <dir>         working folder (default: the current folder; a relative
                      path is resolved from it)
  -h, --help          show this help
  -v, --version       show the version

Exit codes: 0 completed, 1 failed, 2 bad options, 130 cancelled (Ctrl-C),
143 cancelled (SIGTERM), 141 output closed (e.g. piped into head: the run
is cancelled quietly).
`;

const OPTIONS = {
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
  responses: { type: 'boolean' },
  'allow-shell': { type: 'boolean' },
  'read-only': { type: 'boolean' },
  'max-turns': { type: 'string' },
  cwd: { type: 'string' },
  interactive: { type: 'boolean', short: 'i' },
  confirm: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/**
 * Parses `argv` (without node and the script). The task is the positional
 * arguments joined with spaces. The folder is `--cwd`, resolved against the
 * user's folder, else the user's folder itself: when run by loopctl's own
 * `npm start`, `INIT_CWD` (the folder the user ran npm from: `npm start`
 * runs scripts in the package folder), else `process.cwd()`.
 * Interactive mode is `--interactive`, or no task when `stdinIsTTY`.
 * @throws UsageError naming the option for an unknown option, a missing or
 *   bad value, a missing task (off a TTY, without --interactive) or a folder
 *   that does not exist.
 */
export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, stdinIsTTY = false): CliCommand {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const task = positionals.join(' ').trim();
  const interactive = values.interactive === true || (task === '' && stdinIsTTY);
  if (task === '' && !interactive) throw new UsageError('missing the task: loopctl [options] "task", or --interactive (see --help)');
  const nonEmpty = (name: keyof typeof OPTIONS, value: string | undefined) => {
    if (value !== undefined && value.trim() === '') throw new UsageError(`option --${name} needs a non-empty value`);
    return value;
  };
  const baseURL = nonEmpty('base-url', values['base-url']);
  if (baseURL !== undefined) checkBaseURL('option --base-url', baseURL);
  if (values['allow-shell'] && values['read-only'])
    throw new UsageError('options --allow-shell and --read-only cannot be combined: the shell can write files');
  return {
    kind: 'run',
    options: {
      task,
      interactive,
      confirm: values.confirm ?? false,
      cwd: folder(values.cwd, env),
      model: nonEmpty('model', values.model),
      baseURL,
      apiKey: nonEmpty('api-key', values['api-key']),
      responses: values.responses ?? false,
      allowShell: values['allow-shell'] ?? false,
      readOnly: values['read-only'] ?? false,
      maxTurns: maxTurns(values['max-turns']),
    },
  };
}

/**
 * @throws UsageError naming `what` (`option --base-url`, `OPENAI_BASE_URL`)
 *   unless `url` is an http(s) URL with a host.
 */
export function checkBaseURL(what: string, url: string): void {
  if (!/^https?:\/\/[^/]/.test(url)) throw new UsageError(`${what} must be an http(s) URL (got ${JSON.stringify(url)})`);
}

function maxTurns(value: string | undefined): number {
  if (value === undefined) return DEFAULTS.maxTurns;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`option --max-turns must be a positive integer (got ${JSON.stringify(value)})`);
  return n;
}

/**
 * The folder the user ran loopctl's own `npm start` from (`INIT_CWD`), else
 * undefined: npm runs the script in the package folder, so `process.cwd()`
 * is not the user's folder then. Trusted only when npm says it is running
 * loopctl's `start` script and the process does run in loopctl's package
 * folder.
 */
function npmInitCwd(env: NodeJS.ProcessEnv): string | undefined {
  const initCwd = env['INIT_CWD'];
  if (!initCwd || env['npm_lifecycle_event'] !== 'start' || env['npm_package_name'] !== 'loopctl') return undefined;
  return samePath(process.cwd(), fileURLToPath(new URL('../../', import.meta.url))) ? initCwd : undefined;
}

function samePath(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** `--cwd` resolved against the user's folder (see {@link npmInitCwd}), or that folder itself. */
function folder(given: string | undefined, env: NodeJS.ProcessEnv): string {
  const dir = resolve(npmInitCwd(env) ?? process.cwd(), given ?? '.');
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    /* reported below */
  }
  if (!isDir) throw new UsageError(`option --cwd: ${JSON.stringify(dir)} is not a folder`);
  return dir;
}
