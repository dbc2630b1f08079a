/**
 * The `--help` of a subcommand (`loopctl sessions --help`, `loopctl serve --help`, `loopctl worker --help`, or
 * `loopctl help NAME`): its usage and the options it takes, each with the words of the top-level help, so the two
 * never disagree. The options of `serve` and `worker` are every option but the ones they refuse (serve/args.ts);
 * those of `sessions` are its actions' (sessions/command.ts), `--cwd` and `--store`.
 */
import { optionLines, wrapText } from './help.js';
import { OPTION_HELP, optionRows, type OptionDefinitions } from './option-help.js';
import { IGNORED_BY_SERVE, NOT_FOR } from './serve/args.js';

/** The subcommands with a help of their own. */
export type HelpTopic = 'serve' | 'sessions' | 'worker';

/** True for a word that names a subcommand with a help of its own. */
export const isHelpTopic = (word: string | undefined): word is HelpTopic =>
  word === 'serve' || word === 'sessions' || word === 'worker';

const HELP_ROW = ['-h, --help', 'show this help'] as const;
const paragraph = (text: string): string[] => wrapText(text, 78);

/** The options `serve` or `worker` takes: every option but the run-only ones and those it would ignore. */
function servingOptions(command: 'serve' | 'worker'): string[] {
  const refused = new Set<string>([...NOT_FOR[command], ...Object.keys(IGNORED_BY_SERVE), 'all', 'yes']);
  for (const name of ['help', 'version', ...(command === 'worker' ? ['port'] : [])]) refused.add(name);
  return Object.keys(OPTION_HELP).filter((name) => !refused.has(name));
}

/** The help text of `topic`. */
export function subcommandHelp(topic: HelpTopic, options: OptionDefinitions): string {
  const lines = topic === 'sessions' ? sessionsHelp(options) : servingHelp(topic, options);
  return `${lines.join('\n')}\n`;
}

function sessionsHelp(options: OptionDefinitions): string[] {
  return [
    'Usage: loopctl sessions [list] [--all] [--json]  the conversations, newest first',
    '       loopctl sessions show [NAME] [--json]     one (default: the last)',
    '       loopctl sessions rm NAME... [--yes]       delete conversations',
    '',
    ...paragraph(
      'Lists, shows or deletes the saved conversations of the working folder, in sessions.db ' +
        '(LOOPCTL_DATA_DIR) or in Postgres (--store, LOOPCTL_DATABASE_URL). NAME is a name in the working ' +
        'folder, or a whole id <folder>#<name> as list --all --json prints it. show prints the conversation ' +
        'through the sanitiser; rm asks on a terminal, else needs --yes. Each action takes only its own ' +
        'options, --cwd and --store.',
    ),
    '',
    'Options:',
    ...optionLines([
      ...optionRows(options, ['all', 'yes']),
      [
        '--json',
        'list: one JSON object a line (name, folder, id, items, createdAt, updatedAt); show: the Items as NDJSON',
      ],
      ...optionRows(options, ['cwd', 'store']),
      HELP_ROW,
    ]),
    '',
    'Exit codes:',
    '  0    done (also for an empty list)',
    '  1    a conversation not found or in use, or sessions.db unusable',
    '  2    bad options: an unknown action, an option it does not take, rm without',
    '       --yes when stdin is not a terminal',
    "  130  Ctrl-C at rm's question",
    '',
  ];
}

function servingHelp(command: 'serve' | 'worker', options: OptionDefinitions): string[] {
  const usage =
    command === 'serve'
      ? [
          'Usage: loopctl serve [options] [--port n]   the web app on 127.0.0.1',
          '       loopctl serve [options] --queue URL  the same; workers do its runs',
        ]
      : ['Usage: loopctl worker --queue URL [options]  the runs serve --queue queues'];
  const what =
    command === 'serve'
      ? 'Serves a chat page on 127.0.0.1 with the model and tools these options choose, and prints the address ' +
        "to open (with the launch's token) on stdout. It takes no task: the page gives them. With --queue its " +
        'runs go through Redis to loopctl worker processes (LOOPCTL_QUEUE_SECRET in each shell). Ctrl-C stops ' +
        'the server and cancels its runs (exit 130; SIGTERM 143); a port in use exits 2.'
      : 'Takes the runs that loopctl serve --queue URL queues on that Redis and runs them with the agent these ' +
        'options choose (the tools of its --cwd), signed with LOOPCTL_QUEUE_SECRET. It takes no task: the ' +
        'queue gives them. The first SIGINT or SIGTERM drains it (no new run; live runs may end within 25 s, ' +
        'then are cancelled) and it exits 0; a second exits at once (130 / 143).';
  return [
    ...usage,
    '',
    ...paragraph(what),
    '',
    'Options:',
    ...optionLines([...optionRows(options, servingOptions(command)), HELP_ROW]),
    '',
  ];
}
