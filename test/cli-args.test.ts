/**
 * The command line grammar: subcommands, `--` forcing a task, unknown
 * options named, the modes (one task, prompt loop, piped tasks), and a
 * `--help` that lists subcommands, every option with its default (from
 * DEFAULTS), exit codes and environment variables. The README's tables are
 * generated from the same sources.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELP, OPTIONS, parseCli, UsageError } from '../src/cli/args.js';
import { defaultsTable, ENVIRONMENT, exitCodeTable, SUBCOMMANDS } from '../src/cli/help.js';
import { OPTION_HELP, optionRows, optionsTable } from '../src/cli/option-help.js';
import { DEFAULTS } from '../src/defaults.js';
import { EMPTY } from 'rxjs';
import { cliAgent } from '../src/cli/agent.js';
import { CLI_PRICES, cliBudget } from '../src/cli/prices.js';
import { repoRoot } from './support/openai-server.js';

const run = (argv: string[], tty = false) => {
  const command = parseCli(argv, {}, tty);
  if (command.kind !== 'run') throw new Error(`not a run: ${command.kind}`);
  return command.options;
};

describe('subcommands and tasks', () => {
  it('a first positional word serve, sessions or worker is a subcommand; help prints the help', () => {
    expect(parseCli(['serve'])).toMatchObject({ kind: 'serve', port: 7347, options: { task: '', readOnly: false } });
    expect(parseCli(['--read-only', 'serve', '--port', '0'])).toMatchObject({
      kind: 'serve',
      port: 0,
      options: { readOnly: true },
    });
    expect(() => parseCli(['serve', 'the', 'docs'])).toThrow('loopctl serve takes no task (got "the docs")');
    expect(parseCli(['--read-only', 'sessions'])).toEqual({
      kind: 'subcommand',
      name: 'sessions',
      args: [],
      values: { 'read-only': true },
    });
    expect(() => parseCli(['worker'])).toThrow('loopctl worker needs --queue redis://HOST:PORT');
    expect(parseCli(['worker', '--queue', 'redis://127.0.0.1:6379', '--read-only'])).toMatchObject({
      kind: 'worker',
      queue: 'redis://127.0.0.1:6379',
      options: { readOnly: true },
    });
    expect(parseCli(['serve', '--queue', 'redis://r:6379/2'])).toMatchObject({
      kind: 'serve',
      queue: 'redis://r:6379/2',
    });
    expect(() => parseCli(['worker', '--queue', 'http://x'])).toThrow('option --queue must be a redis:// URL');
    expect(() => parseCli(['worker', '--queue', 'redis://x', '--port', '1'])).toThrow(
      '--port is an option of loopctl serve',
    );
    expect(() => parseCli(['--queue', 'redis://x', 'task'])).toThrow(
      '--queue is an option of loopctl serve and loopctl worker',
    );
    expect(() => parseCli(['worker', '--queue', 'redis://x', 'a', 'task'])).toThrow('loopctl worker takes no task');
    expect(parseCli(['sessions', 'rm', 'a b', '--yes', '--cwd', '/tmp'])).toEqual({
      kind: 'subcommand',
      name: 'sessions',
      args: ['rm', 'a b'],
      values: { yes: true, cwd: '/tmp' },
    });
    expect(parseCli(['help'])).toEqual({ kind: 'help' });
  });

  it('after --, or not first, or quoted with other words, it is a task', () => {
    expect(run(['--', 'serve', 'the', 'docs'])).toMatchObject({ task: 'serve the docs', mode: 'once' });
    expect(run(['--', 'help'])).toMatchObject({ task: 'help' });
    expect(run(['please', 'serve'])).toMatchObject({ task: 'please serve' });
    expect(run(['serve the docs'])).toMatchObject({ task: 'serve the docs' });
  });

  it('--port belongs to serve, which refuses the options of a run in the terminal', () => {
    expect(() => parseCli(['--port', '80', 'x'])).toThrow('option --port is an option of loopctl serve');
    expect(() => parseCli(['serve', '--port', '65536'])).toThrow('option --port must be an integer from 0 to 65535');
    expect(() => parseCli(['serve', '--port', '-1'])).toThrow(UsageError);
    for (const flag of ['--json', '--interactive'])
      expect(() => parseCli(['serve', flag])).toThrow(`option ${flag} is not an option of loopctl serve`);
  });

  it('serve takes --confirm (the page asks); worker and serve --queue refuse it', () => {
    expect(parseCli(['serve', '--confirm'], {}, false)).toMatchObject({ kind: 'serve', options: { confirm: true } });
    expect(() => parseCli(['worker', '--queue', 'redis://127.0.0.1:6379', '--confirm'])).toThrow(
      'option --confirm is not an option of loopctl worker',
    );
    expect(() => parseCli(['serve', '--queue', 'redis://127.0.0.1:6379', '--confirm'])).toThrow(
      'option --confirm cannot be combined with --queue: the workers run the tools',
    );
  });

  it('an unknown option is a usage error naming it', () => {
    expect(() => parseCli(['--bogus', 'x'])).toThrow(UsageError);
    expect(() => parseCli(['--bogus', 'x'])).toThrow('unknown option --bogus');
    expect(() => parseCli(['--timeout', '0', 'x'])).toThrow('option --timeout must be a number of seconds >= 0.001');
    expect(() => parseCli(['--timeout', 'soon', 'x'])).toThrow('option --timeout');
  });

  it('a --timeout under a millisecond is refused naming --timeout, not a library field it would become', () => {
    for (const tiny of ['0.0004', '1e-9']) {
      expect(() => parseCli(['--timeout', tiny, 'x'])).toThrow(
        `option --timeout must be a number of seconds >= 0.001 and at most 86400 (got "${tiny}")`,
      );
    }
    expect(run(['--timeout', '0.001', 'x'])).toMatchObject({ timeoutMs: 1 });
  });
});

describe('modes', () => {
  it('a task runs once (stdin is not read for tasks); with -i on a terminal, the prompt loop starts with it', () => {
    expect(run(['do it'])).toMatchObject({ mode: 'once' });
    expect(run(['do it'], true)).toMatchObject({ mode: 'once' });
    expect(run(['-i', 'do it'], true)).toMatchObject({ mode: 'interactive', task: 'do it' });
  });

  it('no task: the prompt loop on a terminal, piped tasks otherwise', () => {
    expect(run([], true)).toMatchObject({ mode: 'interactive', task: '' });
    expect(run(['-i'], true)).toMatchObject({ mode: 'interactive', task: '' });
    expect(run([])).toMatchObject({ mode: 'script' });
    expect(() => parseCli(['--confirm'], {}, false)).toThrow('option --confirm needs a terminal or a task argument');
  });

  it('-i when stdin is not a terminal is refused, with or without a task, instead of silently not looping', () => {
    const refusal = new UsageError(
      'option --interactive needs a terminal: stdin is not one (without -i, piped lines are tasks)',
    );
    for (const argv of [['-i'], ['--interactive'], ['-i', 'do it'], ['--interactive', '--confirm', 'do it']])
      expect(() => parseCli(argv, {}, false), argv.join(' ')).toThrow(refusal);
  });

  it('--json in the prompt loop is refused: its events would be mixed into the conversation on the terminal', () => {
    expect(() => parseCli(['--json', '-i', 'x'], {}, true)).toThrow(
      new UsageError(
        'options --json and --interactive cannot be combined: the prompt loop shows the answer, not events',
      ),
    );
    expect(() => parseCli(['--json'], {}, true)).toThrow(
      new UsageError('option --json needs a task or piped tasks: with neither, the prompt loop runs on the terminal'),
    );
    expect(run(['--json', 'x'], true)).toMatchObject({ mode: 'once', json: true });
    expect(run(['--json'], false)).toMatchObject({ mode: 'script', json: true });
  });

  it('--timeout sets seconds (ms inside), --json and --max-turns default from DEFAULTS', () => {
    expect(run(['--timeout', '2.5', 'x'])).toMatchObject({ timeoutMs: 2500, json: false, maxTurns: DEFAULTS.maxTurns });
    expect(run(['--json', 'x'])).toMatchObject({ timeoutMs: undefined, json: true });
  });
});

describe('long conversations and budgets', () => {
  it('compaction is on unless --no-compact; --context-window, --max-total-tokens and --max-cost are read', () => {
    expect(run(['x'])).toMatchObject({
      compact: true,
      contextWindow: undefined,
      maxTotalTokens: undefined,
      maxCost: undefined,
    });
    const options = run([
      '--no-compact',
      '--context-window',
      '8000',
      '--max-total-tokens',
      '50000',
      '--max-cost',
      '0.25',
      'x',
    ]);
    expect(options).toMatchObject({ compact: false, contextWindow: 8000, maxTotalTokens: 50_000, maxCost: 0.25 });
  });

  it('bad values are usage errors naming the option', () => {
    const cases: [string[], string][] = [
      [['--max-total-tokens', '0'], 'option --max-total-tokens must be a positive integer of tokens (got "0")'],
      [['--max-total-tokens', '1.5'], 'option --max-total-tokens must be a positive integer of tokens (got "1.5")'],
      [['--context-window', 'big'], 'option --context-window must be a positive integer of tokens (got "big")'],
      [['--max-cost', '0'], 'option --max-cost must be a positive number of US dollars (got "0")'],
      [['--max-cost', 'free'], 'option --max-cost must be a positive number of US dollars (got "free")'],
    ];
    for (const [argv, message] of cases) expect(() => run([...argv, 'x'])).toThrow(new UsageError(message));
  });

  it('the CLI agent compacts by default and takes the window; the budget is priced by CLI_PRICES or refused', () => {
    const model = { provider: { id: 'openai:gpt-4o-mini', call: () => EMPTY }, label: 'm', baseURL: 'x' };
    expect(cliAgent(run(['x']), model as never).compaction).toEqual({});
    expect(cliAgent(run(['--no-compact', 'x']), model as never).compaction).toBeUndefined();
    expect(cliAgent(run(['--context-window', '900', 'x']), model as never).contextWindow).toBe(900);
    expect(cliBudget(run(['x']), 'openai:gpt-4o-mini')).toBeUndefined();
    expect(cliBudget(run(['--max-total-tokens', '10', 'x']), 'openai:my-model')).toEqual({ maxTotalTokens: 10 });
    expect(cliBudget(run(['--max-cost', '0.5', 'x']), 'openai:gpt-4o-mini')).toEqual({
      maxCost: 0.5,
      prices: { 'gpt-4o-mini': CLI_PRICES['gpt-4o-mini'] },
    });
    expect(() => cliBudget(run(['--max-cost', '0.5', 'x']), 'openai:my-model')).toThrow(
      /^option --max-cost: loopctl has no price for the model "my-model"; it knows loopctl-offline, gpt-4o-mini/,
    );
  });
});

describe('the conversation flags', () => {
  it('no flag or --new: a new saved conversation; -c/--continue; --session NAME; --no-save', () => {
    expect(run(['x']).conversation).toEqual({ kind: 'new' });
    expect(run(['--new', 'x']).conversation).toEqual({ kind: 'new' });
    expect(run(['-c', 'x']).conversation).toEqual({ kind: 'continue' });
    expect(run(['--continue', 'x']).conversation).toEqual({ kind: 'continue' });
    expect(run(['--session', 'fix login', 'x']).conversation).toEqual({
      kind: 'named',
      name: 'fix login',
      fresh: false,
    });
    expect(run(['--session', 'w', '--new', 'x']).conversation).toEqual({ kind: 'named', name: 'w', fresh: true });
    expect(run(['--no-save', 'x']).conversation).toEqual({ kind: 'unsaved' });
  });

  it('combinations that cannot work and bad names are usage errors naming the option', () => {
    expect(() => parseCli(['--no-save', '--continue', 'x'])).toThrow(
      'options --no-save and --continue cannot be combined: --no-save saves nothing',
    );
    expect(() => parseCli(['--no-save', '--session', 'a', 'x'])).toThrow('options --no-save and --session');
    expect(() => parseCli(['--no-save', '--new', 'x'])).toThrow('options --no-save and --new');
    expect(() => parseCli(['--continue', '--new', 'x'])).toThrow('options --continue and --new cannot be combined');
    for (const argv of [
      ['--session', 'w', '--continue', 'x'],
      ['-c', '--session', 'w', 'x'],
    ])
      expect(() => parseCli(argv), argv.join(' ')).toThrow(
        new UsageError('options --session and --continue cannot be combined: --session NAME continues NAME'),
      );
    expect(() => parseCli(['--session', 'a#b', 'x'])).toThrow(
      'option --session: the name "a#b" holds "#" or a control character',
    );
    expect(() => parseCli(['--session', 'a\u001b[2J', 'x'])).toThrow('holds "#" or a control character');
    expect(() => parseCli(['--session', ' a', 'x'])).toThrow('the name " a" starts or ends with a space');
    expect(() => parseCli(['--session', '', 'x'])).toThrow('the name "" is empty');
    expect(() => parseCli(['--session', 'n'.repeat(101), 'x'])).toThrow('is longer than 100 characters');
    expect(() => parseCli(['--yes', 'x'])).toThrow('option --yes is for loopctl sessions');
    expect(() => parseCli(['--all', 'x'])).toThrow('option --all is for loopctl sessions');
  });
});

describe('flag errors', () => {
  const message = (argv: string[]) => {
    try {
      parseCli(argv);
    } catch (error) {
      expect(error).toBeInstanceOf(UsageError);
      return (error as Error).message;
    }
    throw new Error(`accepted: ${argv.join(' ')}`);
  };

  it("util.parseArgs' errors are one line in the CLI's words, never with a newline", () => {
    const cases: [string[], string][] = [
      [['--bogus', 'x'], 'unknown option --bogus (a task that starts with - goes after --: loopctl -- "--bogus")'],
      [['-x'], 'unknown option -x (a task that starts with - goes after --: loopctl -- "-x")'],
      [['--model'], 'option --model needs a value'],
      [
        ['--model', '--json', 'x'],
        'option --model needs a value, not the option after it (a value that starts with - is written --model=-x)',
      ],
      [
        ['--cwd', '-i', 'x'],
        'option --cwd needs a value, not the option after it (a value that starts with - is written --cwd=-x)',
      ],
      [['--json=yes', 'x'], 'option --json takes no value'],
      [['--help=3'], 'option --help takes no value'],
      [
        ['sessions', 'show', '--session', '-c'],
        'option --session needs a value, not the option after it (a value that starts with - is written --session=-x)',
      ],
    ];
    for (const [argv, text] of cases) expect(message(argv), argv.join(' ')).toBe(text);
  });

  it('every usage error parseCli throws for a bad flag is one line', () => {
    const argvs = [
      ['--max-turns', 'many', 'x'],
      ['--timeout', 'soon', 'x'],
      ['--port', '1', 'x'],
      ['--queue', 'q', 'x'],
      ['--base-url', 'ftp://h', 'x'],
      ['serve', '--port', 'x'],
      ['--model', ' ', 'x'],
    ];
    for (const argv of argvs) expect(message(argv), argv.join(' ')).not.toMatch(/\n/);
  });
});

describe('--store and LOOPCTL_DATABASE_URL', () => {
  const store = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
    const command = parseCli([...argv, 'x'], env);
    if (command.kind !== 'run') throw new Error('not a run');
    return command.options.store;
  };

  it('SQLite by default; a postgres:// URL (its ?schema= taken out for pg) from --store, else the variable', () => {
    expect(store([])).toEqual({ kind: 'sqlite' });
    expect(store([], { LOOPCTL_DATABASE_URL: '' })).toEqual({ kind: 'sqlite' });
    expect(store(['--store', 'postgres://u:pw@db:5432/app?schema=mine&sslmode=require'])).toEqual({
      kind: 'postgres',
      url: 'postgres://u:pw@db:5432/app?sslmode=require',
      schema: 'mine',
      shown: 'postgres://u:***@db:5432/app?sslmode=require',
    });
    const fromEnv = { LOOPCTL_DATABASE_URL: 'postgresql://db/app' };
    expect(store([], fromEnv)).toMatchObject({ kind: 'postgres', url: 'postgresql://db/app', schema: 'loopctl' });
    expect(store(['--store', 'postgres://other/app'], fromEnv)).toMatchObject({ url: 'postgres://other/app' });
  });

  it('anything else is a usage error naming the flag or the variable, the password hidden', () => {
    expect(() => store(['--store', 'sessions.db'])).toThrow(
      new UsageError(
        'option --store must be a postgres:// URL, e.g. postgres://user@127.0.0.1:5432/db?schema=loopctl ' +
          '(got "sessions.db")',
      ),
    );
    expect(() => store([], { LOOPCTL_DATABASE_URL: 'mysql://u:secret@h/db' })).toThrow(
      /^LOOPCTL_DATABASE_URL must be a postgres:\/\/ URL, .* \(got "mysql:\/\/u:\*\*\*@h\/db"\)$/,
    );
    expect(() => store(['--store', 'postgres://h/db?schema='])).toThrow('the schema must be a Postgres name');
    expect(() => parseCli(['--no-save', '--store', 'postgres://h/db', 'x'])).toThrow(
      new UsageError('options --no-save and --store cannot be combined: --no-save saves nothing'),
    );
    expect(() => parseCli(['serve', '--store', 'postgres://h/db'])).toThrow(
      new UsageError('option --store is not an option of loopctl serve: its runs keep no saved conversation'),
    );
  });
});

describe('flag combinations that contradict each other or would be ignored are refused', () => {
  it('--confirm with --read-only: nothing would ask', () => {
    expect(() => parseCli(['--confirm', '--read-only', 'x'])).toThrow(
      new UsageError('options --confirm and --read-only cannot be combined: with no write tool, nothing asks'),
    );
    expect(run(['--confirm', 'x'])).toMatchObject({ confirm: true, readOnly: false });
    expect(run(['--confirm', '--allow-shell', 'x'])).toMatchObject({ confirm: true, allowShell: true });
  });

  it('serve and worker refuse the conversation flags and --otel, which their runs would ignore', () => {
    const queue = ['--queue', 'redis://127.0.0.1:6379'];
    for (const command of [['serve'], ['serve', ...queue], ['worker', ...queue]]) {
      const name = command[0]!;
      for (const [flag, why] of [
        [['--continue'], 'its runs keep no saved conversation'],
        [['--session', 'a'], 'its runs keep no saved conversation'],
        [['--new'], 'its runs keep no saved conversation'],
        [['--no-save'], 'its runs save nothing anyway'],
        [['--otel'], 'only runs in the terminal export spans'],
      ] as const) {
        expect(() => parseCli([...command, ...flag]), `${command.join(' ')} ${flag[0]}`).toThrow(
          new UsageError(`option ${flag[0]} is not an option of loopctl ${name}: ${why}`),
        );
      }
    }
    expect(parseCli(['serve', '--read-only', '--max-turns', '3'])).toMatchObject({ kind: 'serve' });
  });
});

describe('--help', () => {
  it('lists the subcommands, every option with its default, the exit codes and the environment', () => {
    for (const name of Object.keys(SUBCOMMANDS)) expect(HELP).toMatch(new RegExp(`^  ${name} `, 'm'));
    const options = [
      '--model',
      '--base-url',
      '--api-key',
      '--responses',
      '--allow-shell',
      '--read-only',
      '--max-turns',
    ];
    options.push('--timeout', '--cwd', '--interactive', '--confirm', '--json', '--help', '--version');
    options.push('--continue', '--session', '--new', '--no-save', '--all', '--yes');
    const lines = HELP.split('\n');
    for (const option of options) {
      const at = lines.findIndex((l) => l.includes(` ${option}`) && l.startsWith('  -'));
      expect(at, option).toBeGreaterThan(0);
      let entry = lines[at]!;
      for (let i = at + 1; lines[i]!.startsWith(' '.repeat(22)); i++) entry += lines[i];
      if (!['--help', '--version'].includes(option)) expect(entry, option).toMatch(/\(default[ :]/);
    }
    expect(HELP).toContain(`(default ${DEFAULTS.maxTurns})`);
    expect(HELP).toContain('(default 60 s, 30 s and 300 s)');
    expect(HELP).toContain('longest server retry-after honoured (a longer one fails at once): 60 s');
    for (const code of ['0', '1', '2', '130', '141', '143']) expect(HELP).toMatch(new RegExp(`^  ${code} +\\S`, 'm'));
    for (const name of Object.keys(ENVIRONMENT)) expect(HELP).toMatch(new RegExp(`^  ${name}$`, 'm'));
    expect(HELP.split('\n').filter((l) => l.length > 80)).toEqual([]);
  });
});

describe('--help keeps each option apart from its meaning', () => {
  it('an option too long for the column has its meaning on the next line, aligned with the others', () => {
    const lines = HELP.split('\n');
    const rows = optionRows(OPTIONS);
    for (const [flag, meaning] of rows) {
      // The flag's line: `--all`'s, not `--allow-shell`'s; a flag run into its meaning (`<n>the`) has none.
      const at = lines.findIndex((l) => l.startsWith(`  ${flag}`) && /^( |$)/.test(l.slice(2 + flag.length)));
      expect(at, `${flag} followed by a space or the end of its line`).toBeGreaterThan(0);
      const rest = lines[at]!.slice(2 + flag.length);
      const first = rest === '' ? lines[at + 1]! : lines[at]!;
      expect(first.slice(22), flag).toBe(first.slice(22).trimStart());
      expect(meaning.startsWith(first.slice(22).split(' ')[0]!), flag).toBe(true);
    }
    const long = rows.filter(([flag]) => flag.length >= 20).map(([flag]) => flag);
    console.log(`options past the column: ${long.join(', ')}`);
    expect(long).toContain('--context-window <n>');
  });
});

describe('README', () => {
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const between = (marker: string) => {
    const m = new RegExp(`<!-- ${marker} -->\\n([\\s\\S]*?)\\n<!-- /${marker} -->`).exec(readme);
    return m?.[1];
  };

  it("docs/cli.md's defaults table is generated from DEFAULTS, and its exit-code table from the CLI", () => {
    const cli = readFileSync(path.join(repoRoot, 'docs/cli.md'), 'utf8');
    const inCli = (marker: string) =>
      new RegExp(`<!-- ${marker} -->\\n([\\s\\S]*?)\\n<!-- /${marker} -->`).exec(cli)?.[1];
    expect(inCli('cli-defaults')).toBe(defaultsTable());
    expect(inCli('cli-exit-codes')).toBe(exitCodeTable());
  });

  it('its options table is generated from OPTIONS and OPTION_HELP: a row for each option the CLI parses', () => {
    const table = between('cli-options');
    expect(table, 'README.md between the cli-options markers (the expected table: the + side of the diff)').toBe(
      optionsTable(OPTIONS),
    );
    const rows = table!.split('\n').slice(2);
    const flags = rows.map((row) =>
      row
        .split(' | ', 1)[0]!
        .match(/--[a-z-]+/g)!
        .join(' '),
    );
    expect([...flags].sort()).toEqual(
      Object.keys(OPTIONS)
        .map((name) => `--${name}`)
        .sort(),
    );
    expect(rows).toContain('| `-i`, `--interactive` | ' + OPTION_HELP.interactive.meaning + ' |');
    expect(rows).toContain('| `--max-turns <n>` | ' + `turns before giving up (default ${DEFAULTS.maxTurns}) |`);
  });

  it('a meaning that changes without the README changing fails the comparison', () => {
    const changed = optionsTable(OPTIONS).replace('turns before giving up', 'turns before stopping');
    expect(between('cli-options')).not.toBe(changed);
  });
});
