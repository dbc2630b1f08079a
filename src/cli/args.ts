import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../defaults.js';
import { helpText, SUBCOMMANDS } from './help.js';
import { isHelpTopic, type HelpTopic } from './subcommand-help.js';
import { OPTIONS } from './options.js';
import { storeLocation, type StoreLocation } from './store/location.js';
import { nameProblem } from './store/names.js';
import { PROVIDER_NAMES, type ProviderName } from './providers.js';
import { checkServeArgs, servePort } from './serve/args.js';

import { parseArgsError, UsageError } from './usage-error.js';

export { UsageError };

/**
 * How the command runs: `once` (the task given on the command line, then
 * exit), `interactive` (the prompt loop on a terminal) or `script` (stdin is
 * not a terminal and no task was given: each non-empty line is a task).
 */
export type CliMode = 'once' | 'interactive' | 'script';

/** The parsed command line of `loopctl`. */
export interface CliOptions {
  /** The task; '' when none was given (interactive: the prompt asks; script: stdin gives them). */
  readonly task: string;
  readonly mode: CliMode;
  /** `--confirm`: write_file and run_shell ask for approval first. */
  readonly confirm: boolean;
  /** Absolute path of the working folder. */
  readonly cwd: string;
  /** Model name; undefined = the default of the chosen model (see `selectModel`). */
  readonly model: string | undefined;
  /** `--provider`: which API the model speaks; undefined = chosen from the keys set (see `selectModel`). */
  readonly provider: ProviderName | undefined;
  readonly baseURL: string | undefined;
  readonly apiKey: string | undefined;
  readonly responses: boolean;
  readonly allowShell: boolean;
  readonly readOnly: boolean;
  /** Turns before the run fails with `max_turns` (default `DEFAULTS.maxTurns`). */
  readonly maxTurns: number;
  /** `--timeout` in ms: the first-event and idle deadlines; bound of a non-streamed answer; undefined: defaults. */
  readonly timeoutMs: number | undefined;
  /** `--json`: NDJSON events on stdout, human lines on stderr. */
  readonly json: boolean;
  /** Which saved conversation the runs continue: `--continue`, `--session`, `--new`, `--no-save`. */
  readonly conversation: ConversationChoice;
  /** `--otel`: export the runs' spans with OTLP/HTTP (docs/telemetry.md). */
  readonly otel: boolean;
  /** `--store postgres://…` (or `LOOPCTL_DATABASE_URL`): where conversations are saved; default SQLite. */
  readonly store: StoreLocation;
  /** Compaction of a long conversation (docs/long-runs.md): on unless `--no-compact`. */
  readonly compact: boolean;
  /** `--context-window <tokens>`: the model's window, overriding loopctl's table (`agent.contextWindow`). */
  readonly contextWindow: number | undefined;
  /** `--max-total-tokens <n>`: the run's `budget.maxTotalTokens`. */
  readonly maxTotalTokens: number | undefined;
  /** `--max-cost <usd>`: the run's `budget.maxCost`, priced by the CLI's price table (see `cliBudget`). */
  readonly maxCost: number | undefined;
  /** `--guard <pattern>`: the input and output guardrail's pattern (case-insensitive); undefined without it. */
  readonly guard?: RegExp;
}

/**
 * Which conversation a command's runs use (docs/cli.md "Saved conversations"):
 * - `new`: a new saved conversation with a generated name (no flag, or `--new`);
 * - `continue`: the folder's most recently updated one (`--continue`; a new one when it has none);
 * - `named`: `--session NAME`, continued when it exists, else started; with `--new` (`fresh`) it must not exist;
 * - `unsaved`: `--no-save`, a conversation in memory only.
 */
export type ConversationChoice =
  | { readonly kind: 'new' }
  | { readonly kind: 'continue' }
  | { readonly kind: 'named'; readonly name: string; readonly fresh: boolean }
  | { readonly kind: 'unsaved' };

/**
 * What {@link parseCli} found: a run to do, `loopctl serve` (the options of
 * its model and tools, and its port), help or the version to print, or
 * a subcommand (`sessions`, `worker`; `help` is `{ kind: 'help' }`).
 */
export type CliCommand =
  | { readonly kind: 'run'; readonly options: CliOptions }
  | { readonly kind: 'serve'; readonly options: CliOptions; readonly port: number; readonly queue?: string }
  | { readonly kind: 'worker'; readonly options: CliOptions; readonly queue: string }
  /** The help: the top-level one, or a subcommand's (`topic`). */
  | { readonly kind: 'help'; readonly topic?: HelpTopic }
  | { readonly kind: 'version' }
  | {
      /** `loopctl sessions` (the only subcommand parsed here: `serve` and `worker` have their own kinds). */
      readonly kind: 'subcommand';
      readonly name: 'sessions';
      readonly args: readonly string[];
      /** The options given on the command line, by long name (the subcommand checks which apply). */
      readonly values: Readonly<Record<string, string | boolean | undefined>>;
    };

export { OPTIONS };

/** The `--help` text (see `helpText`). */
export const HELP = helpText(OPTIONS);

/**
 * Parses `argv` (without node and the script). A first positional word that
 * is exactly a subcommand name (`serve`, `sessions`, `worker`, `help`) is
 * that subcommand, unless it comes after `--` (`loopctl -- serve the docs`
 * is a task); `serve` takes the model and tool options and `--port` (and
 * no task). Otherwise the task is the positional arguments joined with
 * spaces. The folder is `--cwd`, resolved against the user's folder, else
 * the user's folder itself: when run by loopctl's own `npm start`,
 * `INIT_CWD` (the folder the user ran npm from: `npm start` runs scripts in
 * the package folder), else `process.cwd()`.
 * Mode: a task given → `once` (`interactive` with `-i`; stdin is never
 * read for tasks then); no task → `interactive` on a terminal, else `script`.
 * @throws UsageError naming the option for an unknown option, a missing or
 *   bad value, `-i` when stdin is not a terminal, `--json` in the prompt loop,
 *   `--confirm` with piped tasks or with `--read-only`, `--session` with `--continue`,
 *   a folder that does not exist, `--port` without `serve`, or a task or run-only option with `serve`.
 */
export function parseCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  stdinIsTTY = false,
): CliCommand {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw parseArgsError(error);
  }
  const { values, positionals, tokens } = parsed;
  const first = tokens.find((t) => t.kind === 'positional' || t.kind === 'option-terminator');
  // `--help` after a subcommand's name is that subcommand's help (`loopctl sessions --help`).
  const command = first?.kind === 'positional' ? first.value : undefined;
  if (values.help) return isHelpTopic(command) ? { kind: 'help', topic: command } : { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const working = first?.kind === 'positional' && first.value === 'worker';
  const serving = (first?.kind === 'positional' && first.value === 'serve') || working;
  if (first?.kind === 'positional' && Object.hasOwn(SUBCOMMANDS, first.value) && !serving) {
    if (first.value === 'help') {
      const topic = positionals[1]; // `loopctl help sessions`: that subcommand's help
      return isHelpTopic(topic) ? { kind: 'help', topic } : { kind: 'help' };
    }
    return { kind: 'subcommand', name: 'sessions', args: positionals.slice(1), values };
  }
  if (serving) checkServeArgs(values, positionals.slice(1), working ? 'worker' : 'serve');
  else if (values.port !== undefined) throw new UsageError('option --port is an option of loopctl serve');
  if (!serving && values.queue !== undefined)
    throw new UsageError('option --queue is an option of loopctl serve and loopctl worker');
  if (working && values.port !== undefined) throw new UsageError('option --port is an option of loopctl serve');
  const queue = values.queue === undefined ? undefined : queueUrl(values.queue);
  if (working && queue === undefined) throw new UsageError('loopctl worker needs --queue redis://HOST:PORT');
  for (const only of ['all', 'yes'] as const)
    if (values[only]) throw new UsageError(`option --${only} is for loopctl sessions (see --help)`);

  const task = serving ? '' : positionals.join(' ').trim();
  if (values.interactive && !stdinIsTTY)
    throw new UsageError('option --interactive needs a terminal: stdin is not one (without -i, piped lines are tasks)');
  const mode: CliMode =
    task !== '' ? (values.interactive ? 'interactive' : 'once') : stdinIsTTY ? 'interactive' : 'script';
  if (values.json && mode === 'interactive')
    throw new UsageError(
      values.interactive
        ? 'options --json and --interactive cannot be combined: the prompt loop shows the answer, not events'
        : 'option --json needs a task or piped tasks: with neither, the prompt loop runs on the terminal',
    );
  const nonEmpty = (name: keyof typeof OPTIONS, value: string | undefined) => {
    if (value !== undefined && value.trim() === '') throw new UsageError(`option --${name} needs a non-empty value`);
    return value;
  };
  const baseURL = nonEmpty('base-url', values['base-url']);
  if (baseURL !== undefined) checkBaseURL('option --base-url', baseURL);
  if (values['allow-shell'] && values['read-only'])
    throw new UsageError('options --allow-shell and --read-only cannot be combined: the shell can write files');
  if (values.confirm && values['read-only'])
    throw new UsageError('options --confirm and --read-only cannot be combined: with no write tool, nothing asks');
  if (values.confirm && mode === 'script' && !serving)
    // serve --confirm asks in the page
    throw new UsageError(
      'option --confirm needs a terminal or a task argument: with piped tasks, stdin cannot also answer',
    );
  const options: CliOptions = {
    task,
    mode,
    confirm: values.confirm ?? false,
    cwd: folder(values.cwd, env),
    model: nonEmpty('model', values.model),
    provider: providerName(values.provider),
    baseURL,
    apiKey: nonEmpty('api-key', values['api-key']),
    responses: values.responses ?? false,
    allowShell: values['allow-shell'] ?? false,
    readOnly: values['read-only'] ?? false,
    maxTurns: maxTurns(values['max-turns']),
    timeoutMs: timeout(values.timeout),
    json: values.json ?? false,
    conversation: conversationChoice(values),
    otel: values.otel ?? false,
    store: storeLocation(values.store, env),
    compact: !(values['no-compact'] ?? false),
    contextWindow: positiveInt('context-window', values['context-window']),
    maxTotalTokens: positiveInt('max-total-tokens', values['max-total-tokens']),
    maxCost: maxCost(values['max-cost']),
    ...guardOption(values.guard),
  };
  if (working) return { kind: 'worker', options, queue: queue! };
  if (serving) return { kind: 'serve', options, port: servePort(values.port), ...(queue ? { queue } : {}) };
  return { kind: 'run', options };
}

/**
 * `--queue <url>`: the Redis of `loopctl serve` / `loopctl worker` runs on a queue (loopctl/bullmq), a
 * `redis://` or `rediss://` URL.
 * @throws UsageError naming `--queue` for anything else.
 */
function queueUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'redis:' && url.protocol !== 'rediss:'))
    throw new UsageError(`option --queue must be a redis:// URL (got ${JSON.stringify(value)})`);
  return value;
}

/**
 * The conversation flags: `--continue`, `--session NAME` (with `--new`: it
 * must not exist yet), `--new`, `--no-save`; at most one of `--continue`, `--session`, `--no-save`.
 * @throws UsageError for a bad name or a combination that cannot work.
 */
function conversationChoice(values: {
  continue?: boolean | undefined;
  session?: string | undefined;
  new?: boolean | undefined;
  'no-save'?: boolean | undefined;
  store?: string | undefined;
}): ConversationChoice {
  const { session: name, new: fresh = false } = values;
  if (values['no-save']) {
    const other = ['continue', 'session', 'new', 'store'].find(
      (flag) => values[flag as keyof typeof values] !== undefined,
    );
    if (other) throw new UsageError(`options --no-save and --${other} cannot be combined: --no-save saves nothing`);
    return { kind: 'unsaved' };
  }
  if (values.continue && fresh) throw new UsageError('options --continue and --new cannot be combined');
  if (values.continue && name !== undefined)
    throw new UsageError('options --session and --continue cannot be combined: --session NAME continues NAME');
  if (name !== undefined) {
    const problem = nameProblem(name);
    if (problem) throw new UsageError(`option --session: the name ${JSON.stringify(name)} ${problem}`);
    return { kind: 'named', name, fresh };
  }
  return values.continue ? { kind: 'continue' } : { kind: 'new' };
}

/**
 * @throws UsageError naming `what` (`option --base-url`, `OPENAI_BASE_URL`)
 *   unless `url` is an http(s) URL with a host.
 */
export function checkBaseURL(what: string, url: string): void {
  if (!/^https?:\/\/[^/]/.test(url))
    throw new UsageError(`${what} must be an http(s) URL (got ${JSON.stringify(url)})`);
}

function maxTurns(value: string | undefined): number {
  if (value === undefined) return DEFAULTS.maxTurns;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`option --max-turns must be a positive integer (got ${JSON.stringify(value)})`);
  return n;
}

/** A positive integer option (`--context-window`, `--max-total-tokens`), or undefined when not given. */
function positiveInt(name: keyof typeof OPTIONS, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`option --${name} must be a positive integer of tokens (got ${JSON.stringify(value)})`);
  return n;
}

/** `--max-cost <usd>`: a positive number of US dollars. */
function maxCost(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const usd = Number(value.trim());
  if (value.trim() === '' || !Number.isFinite(usd) || usd <= 0)
    throw new UsageError(`option --max-cost must be a positive number of US dollars (got ${JSON.stringify(value)})`);
  return usd;
}

/** `--timeout <s>` in ms: a number of seconds (fractions allowed) from 0.001 (1 ms) to one day. */
function timeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value.trim());
  const ms = Math.round(seconds * 1000);
  if (value.trim() === '' || !Number.isFinite(seconds) || ms < 1 || seconds > 86_400)
    throw new UsageError(
      `option --timeout must be a number of seconds >= 0.001 and at most 86400 (got ${JSON.stringify(value)})`,
    );
  return ms;
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

/**
 * `--cwd` resolved against the user's folder (see {@link npmInitCwd}), or that folder itself.
 * @throws UsageError when it is not a folder.
 */
export function folder(given: string | undefined, env: NodeJS.ProcessEnv): string {
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

/** `--provider`'s value. @throws UsageError for a name not in {@link PROVIDER_NAMES}. */
function providerName(value: string | undefined): ProviderName | undefined {
  if (value === undefined) return undefined;
  const name = PROVIDER_NAMES.find((p) => p === value.trim().toLowerCase());
  if (name === undefined) {
    throw new UsageError(
      `option --provider must be one of ${PROVIDER_NAMES.join(', ')} (got ${JSON.stringify(value)})`,
    );
  }
  return name;
}

/** `--guard <pattern>`: a case-insensitive regular expression; a pattern that does not compile is a usage error. */
function guardOption(value: string | undefined): { guard?: RegExp } {
  if (value === undefined) return {};
  if (value.trim() === '') throw new UsageError('option --guard needs a non-empty pattern');
  try {
    return { guard: new RegExp(value, 'i') };
  } catch (err) {
    throw new UsageError(`option --guard is not a regular expression: ${(err as Error).message}`);
  }
}
