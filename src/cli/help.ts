import { DEFAULTS } from '../defaults.js';
import { optionRows, type OptionDefinitions } from './option-help.js';

/**
 * The words that name a subcommand when they come first (before any `--`).
 * `serve`, `sessions`, `worker` and `help`.
 */
export const SUBCOMMANDS: Readonly<Record<string, string>> = {
  serve: 'the web app on 127.0.0.1 (--port): chat, Stop, steering',
  sessions: 'list, show or delete the saved conversations (see below)',
  worker: 'run the runs of loopctl serve --queue (needs --queue URL)',
  help: 'show this help',
};

/** The environment variables the command reads, with what each does. */
export const ENVIRONMENT: Readonly<Record<string, string>> = {
  ANTHROPIC_API_KEY: 'API key of Anthropic; when set, the default --provider is anthropic (--api-key wins)',
  ANTHROPIC_BASE_URL: 'its endpoint, an http(s) URL without /v1 (--base-url wins)',
  GEMINI_API_KEY:
    'API key of Gemini (or GOOGLE_API_KEY); when set, the default --provider is gemini unless ' +
    'ANTHROPIC_API_KEY is set',
  OPENAI_API_KEY:
    'API key of the OpenAI-compatible server; the default --provider when neither of the above is ' +
    'set (--api-key wins)',
  OPENAI_BASE_URL: 'its endpoint, an http(s) URL (--base-url wins)',
  LOOPCTL_OFFLINE_DELAY_MS: 'pause between two words of the offline model, in ms from 0 to 60000 (default 15)',
  LOOPCTL_DATA_DIR:
    'absolute path of the folder of sessions.db, the saved conversations ' +
    '(default $XDG_DATA_HOME/loopctl, else ~/.local/share/loopctl)',
  LOOPCTL_DATABASE_URL: 'a postgres:// URL: conversations are saved there instead of sessions.db (--store wins)',
  LOOPCTL_QUEUE_SECRET:
    'with --queue: the secret (32 bytes or more) serve and every worker sign runs and commands with; ' +
    'set one with: export LOOPCTL_QUEUE_SECRET=$(openssl rand -hex 32)',
  XDG_DATA_HOME: 'where user data goes; loopctl saves conversations in its loopctl folder (default ~/.local/share)',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'with --otel: the OTLP/HTTP collector (default http://localhost:4318)',
  OTEL_SERVICE_NAME: 'with --otel: the service name of the spans (default loopctl)',
  OTEL_TRACES_EXPORTER: 'with --otel: otlp (default), console (each span as a line on stderr) or none',
};

/** The exit codes, in the order the help and docs/cli.md list them. */
export const EXIT_CODES: readonly (readonly [number, string])[] = [
  [0, 'the run completed (with piped tasks: the last one did)'],
  [1, 'the run failed (model error, turn limit, …), sessions.db is unusable, or the output could not be written'],
  [2, 'bad options or configuration, no task, package not installed, port in use'],
  [130, 'cancelled by Ctrl-C (SIGINT)'],
  [141, 'the output was closed (e.g. piped into head)'],
  [143, 'cancelled by SIGTERM'],
];

const s = (ms: number | false): string => (ms === false ? 'off' : `${ms / 1000} s`);

/**
 * The defaults a run of the command uses, one `[setting, value]` row each:
 * the library's {@link DEFAULTS}, which `--timeout` and `--max-turns` change.
 */
export function defaultRows(): readonly (readonly [string, string])[] {
  const { deadlines, retry } = DEFAULTS;
  return [
    ['wait for the first event of a streamed answer (`--timeout`)', s(deadlines.firstEventMs)],
    ['longest silence within a stream (`--timeout`)', s(deadlines.idleMs)],
    ['wait for a whole non-streamed answer, e.g. a rescue (`--timeout`)', s(deadlines.requestMs)],
    ['retries of a transient model error', `${retry.maxRetries}`],
    [
      'backoff before a retry (full jitter)',
      `up to ${s(retry.initialDelayMs)}, ×${retry.multiplier} each time, at most ${s(retry.maxDelayMs)}`,
    ],
    ['longest server `retry-after` honoured (a longer one fails at once)', s(retry.maxRetryAfterMs)],
    ['turns before giving up (`--max-turns`)', `${DEFAULTS.maxTurns}`],
  ];
}

/** docs/cli.md's defaults table (Markdown), generated from {@link defaultRows}; a test keeps it in step. */
export function defaultsTable(): string {
  const rows = defaultRows().map(([what, value]) => `| ${what} | ${value} |`);
  return ['| setting | default |', '| --- | --- |', ...rows].join('\n');
}

/** docs/cli.md's exit-code table (Markdown), generated from {@link EXIT_CODES}. */
export function exitCodeTable(): string {
  const rows = EXIT_CODES.map(([code, what]) => `| ${code} | ${what} |`);
  return ['| code | meaning |', '| --- | --- |', ...rows].join('\n');
}

const pad = (text: string, width: number) => text.padEnd(width);

/**
 * The `--help` text: usage, subcommands, every option of `options` (`OPTIONS`) with its default
 * ({@link OPTION_HELP}), the defaults, exit codes and environment.
 */
export function helpText(options: OptionDefinitions): string {
  const width = 20;
  return [
    'Usage: loopctl [options] "task"     run one task on the current folder, exit',
    '       loopctl [options]            no task: a prompt loop on a terminal; with',
    '                                    piped stdin, each non-empty line is a task',
    '       loopctl [options] -- words…  everything after -- is the task',
    '       loopctl serve [--port n]     the web app: open the address it prints',
    '       loopctl serve --queue URL    the same, its runs done by loopctl worker',
    '       loopctl worker --queue URL   run queued runs (Redis URL); SIGTERM drains',
    '       loopctl <command>',
    '',
    'Commands:',
    ...Object.entries(SUBCOMMANDS).map(([name, what]) => `  ${pad(name, width)}${what}`),
    '',
    'The answer streams on stdout on a terminal; into a pipe or a file each answer',
    'is written once it is complete. Status lines go to stderr. Ctrl-C stops the',
    'run cleanly; a second Ctrl-C exits at once. In the prompt loop a line typed',
    'while a run works steers it; /help lists the commands there.',
    '',
    'Each completed run is saved in a conversation of the working folder, in',
    '$LOOPCTL_DATA_DIR/sessions.db (default ~/.local/share/loopctl/sessions.db);',
    "a cancelled run is not. --continue goes on with the folder's last one.",
    "  loopctl sessions [list] [--all]      this folder's (--all: every folder's)",
    '  loopctl sessions show [NAME]         one, through the sanitiser (default: the',
    "                                       folder's last); --json: Items as NDJSON",
    '  loopctl sessions rm NAME... [--yes]  delete; asks on a terminal, else needs',
    '                                       --yes',
    '',
    'Model: --provider anthropic, gemini or openai (default: the first whose API',
    'key is set; openai for --base-url alone). With no key and no --base-url, the',
    'built-in offline model (a few rules, no AI): it lists files of a kind, counts',
    'the lines of a file, finds a pattern and summarises a file into a new one.',
    '',
    'Options:',
    ...optionLines(optionRows(options), width),
    '',
    'Defaults:',
    ...defaultRows().map(([what, value]) => `  ${what.replace(/`/g, '')}: ${value}`),
    '',
    'Exit codes:',
    ...EXIT_CODES.map(([code, what]) => `  ${pad(String(code), 5)}${wrapText(what, 73).join(`\n${' '.repeat(7)}`)}`),
    '',
    'Environment:',
    ...Object.entries(ENVIRONMENT).flatMap(([name, what]) => [
      `  ${name}`,
      ...wrapText(what, 72).map((line) => `      ${line}`),
    ]),
    '',
  ].join('\n');
}

/**
 * `[flag, meaning]` rows as the help's option lines: the flag in a column of `width`, its meaning wrapped beside it
 * (an option as wide as the column or wider, `--context-window <n>`, has its meaning on the next line).
 */
export function optionLines(rows: readonly (readonly [string, string])[], width = 20): string[] {
  const wrap = (text: string) => wrapText(text, 78 - width).join(`\n${' '.repeat(width + 2)}`);
  return rows.map(([flag, what]) =>
    flag.length < width ? `  ${pad(flag, width)}${wrap(what)}` : `  ${flag}\n${' '.repeat(width + 2)}${wrap(what)}`,
  );
}

/** `text` in lines of at most `width` characters, broken at spaces. */
export function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}
