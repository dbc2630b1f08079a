import { DEFAULTS } from '../defaults.js';
import type { OPTIONS } from './options.js';
import { PROVIDER_NAMES, PROVIDER_SETTINGS } from './providers.js';
import { DEFAULT_PORT } from './serve/args.js';

/** The options `parseCli` knows, by long name, as `util.parseArgs` defines them. */
export type OptionDefinitions = typeof OPTIONS;

/** What `--help` and the README say about one option. */
export interface OptionHelp {
  /** The name of a string option's value, e.g. `n` for `--max-turns <n>`; absent for a boolean option. */
  readonly value?: string;
  /** What it does and its default, in Markdown (`code` and **bold**; `--help` prints it without the marks). */
  readonly meaning: string;
}

const s = (ms: number) => `${ms / 1000} s`;
const { deadlines } = DEFAULTS;

/**
 * The meaning of every option of {@link OPTIONS}, in the order `--help` and the README's options table list
 * them. Its type requires an entry for each option, so an option cannot be added without saying what it does.
 */
export const OPTION_HELP: { readonly [name in keyof OptionDefinitions]: OptionHelp } = {
  provider: {
    value: 'name',
    meaning:
      `the model's API: ${PROVIDER_NAMES.map((p) => `\`${p}\``).join(', ')} (default: the first whose key is set, ` +
      'in that order; `openai` with `--base-url` or `--api-key` alone; else the offline model)',
  },
  model: {
    value: 'name',
    meaning: `model name (default ${Object.entries(PROVIDER_SETTINGS)
      .map(([name, p]) => `${name}: \`${p.defaultModel}\``)
      .join(', ')}; offline: \`loopctl-offline\`)`,
  },
  'base-url': {
    value: 'url',
    meaning:
      "the provider's endpoint (default: `ANTHROPIC_BASE_URL` or `OPENAI_BASE_URL`, else the SDK's; gemini: the " +
      'origin without `/v1beta`)',
  },
  'api-key': {
    value: 'key',
    meaning:
      "API key (default: the provider's variable: `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` or `GOOGLE_API_KEY`, " +
      '`OPENAI_API_KEY`)',
  },
  responses: { meaning: 'openai: use the Responses API instead of Chat Completions (default: off)' },
  'allow-shell': {
    meaning:
      "give the agent a `run_shell` tool; **not sandboxed**: commands run as you, and a cancel kills the command's " +
      'process group (default: off)',
  },
  'read-only': { meaning: 'no `write_file` tool (default: off)' },
  guard: {
    value: 'pattern',
    meaning:
      'refuse a task, or an answer, matching this regular expression (ignoring case): the run ends refused by a ' +
      'guardrail and nothing of it is saved; an answer is shown sentence by sentence, each once checked (default: off)',
  },
  'max-turns': { value: 'n', meaning: `turns before giving up (default ${DEFAULTS.maxTurns})` },
  'no-compact': {
    meaning:
      "don't compact a long conversation (default: past 80% of the model's context window the older turns are " +
      'replaced by a summary the model writes; the saved conversation keeps every message)',
  },
  'context-window': {
    value: 'n',
    meaning: "the model's context window in tokens (default: loopctl's table; none for other models)",
  },
  'max-total-tokens': {
    value: 'n',
    meaning:
      'stop the run once it used this many input and output tokens, keeping what it did (default: no limit; not ' +
      "the provider's per-request output limit)",
  },
  'max-cost': {
    value: 'usd',
    meaning:
      "stop the run once it cost this many US dollars, at loopctl's list prices of the default models " +
      '(default: no limit; refused for a model without a price)',
  },
  timeout: {
    value: 's',
    meaning:
      'seconds to wait for the model: its first event, each silence of a stream, and a whole non-streamed answer ' +
      `(default ${s(deadlines.firstEventMs)}, ${s(deadlines.idleMs)} and ${s(deadlines.requestMs)})`,
  },
  cwd: { value: 'dir', meaning: 'working folder (default: the current folder; a relative path is taken from it)' },
  interactive: {
    meaning: 'the prompt loop even with a task; needs a terminal (default: on when no task is given on one)',
  },
  confirm: {
    meaning:
      'ask "allow? [y/N]" on stdin before each `write_file` and `run_shell` call; anything but y or yes refuses, ' +
      'and the model gets the refusal as a tool error; with `serve`, Approve/Reject in the page (default: off)',
  },
  json: {
    meaning:
      'write the run events as NDJSON on stdout, one `RunEvent` per line; human lines go to stderr (default: off)',
  },
  continue: {
    meaning: "continue this folder's last saved conversation (default: off: each command starts a new saved one)",
  },
  session: {
    value: 'name',
    meaning: 'continue the conversation of this name in this folder, or start it (default: a new one)',
  },
  new: { meaning: 'start a new conversation; with `--session`, one that must not exist yet (default: on)' },
  'no-save': { meaning: 'keep the conversation in memory only (default: off: completed runs are saved)' },
  store: {
    value: 'url',
    meaning:
      'save conversations in Postgres at this `postgres://` URL (`?schema=NAME`, default `loopctl`; needs `pg` ' +
      'installed) instead of `sessions.db` (default: `LOOPCTL_DATABASE_URL`, else SQLite)',
  },
  otel: {
    meaning:
      'export OpenTelemetry spans of each run over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` ' +
      '(`OTEL_TRACES_EXPORTER=console`: one line per span on stderr); needs the OpenTelemetry SDK installed ' +
      '(default: off)',
  },
  all: { meaning: "`loopctl sessions list`: every folder's conversations (default: this folder's)" },
  yes: {
    meaning: '`loopctl sessions rm`: delete without asking (default: ask; required when stdin is not a terminal)',
  },
  port: { value: 'n', meaning: `\`loopctl serve\`: the port on 127.0.0.1 (default ${DEFAULT_PORT}; 0: any free port)` },
  queue: {
    value: 'url',
    meaning:
      '`loopctl serve` and `loopctl worker`: runs go through Redis at this `redis://` URL (`?queue=NAME`: the ' +
      'queue, default `cli`; needs `bullmq` installed): serve queues them, each worker runs them, signed with ' +
      '`LOOPCTL_QUEUE_SECRET` (default: serve runs them itself)',
  },
  help: { meaning: 'show this help: every option with its default, the exit codes and the environment variables' },
  version: { meaning: 'show the version' },
};

/** One option as it is written: `-i, --interactive`, `--max-turns <n>` (`code`: each flag in backticks). */
export function optionFlag(options: OptionDefinitions, name: keyof OptionDefinitions, code = false): string {
  const definition: { readonly type: string; readonly short?: string } = options[name];
  const mark = (flag: string) => (code ? `\`${flag}\`` : flag);
  const { value } = OPTION_HELP[name];
  const long = mark(`--${name}${value === undefined ? '' : ` <${value}>`}`);
  return definition.short === undefined ? long : `${mark(`-${definition.short}`)}, ${long}`;
}

/**
 * `[flag, meaning]` of each option for `--help` (of the options named in `only`, in this table's order, when given):
 * plain text, without Markdown's marks.
 */
export function optionRows(options: OptionDefinitions, only?: readonly string[]): (readonly [string, string])[] {
  const chosen = only === undefined ? names() : names().filter((name) => only.includes(name));
  return chosen.map((name) => [optionFlag(options, name), OPTION_HELP[name].meaning.replace(/`|\*\*/g, '')]);
}

/**
 * The README's options table (Markdown), generated from `OPTIONS` and {@link OPTION_HELP}; a test keeps the
 * README's copy, between `<!-- cli-options -->` and `<!-- /cli-options -->`, in step.
 */
export function optionsTable(options: OptionDefinitions): string {
  const rows = names().map((name) => `| ${optionFlag(options, name, true)} | ${OPTION_HELP[name].meaning} |`);
  return ['| option | meaning |', '| --- | --- |', ...rows].join('\n');
}

const names = () => Object.keys(OPTION_HELP) as (keyof OptionDefinitions)[];
