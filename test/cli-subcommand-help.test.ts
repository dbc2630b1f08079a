/**
 * `--help` after a subcommand's name prints that subcommand's help (docs/cli.md, "Grammar"): `loopctl sessions
 * --help`, `loopctl serve --help`, `loopctl worker --help` (and `loopctl help NAME`) give its usage and the options
 * it takes, not the whole help; `loopctl --help`, and `--help` with a task, still print the whole help. The options
 * a subcommand's help leaves out are exactly the ones it refuses.
 */
import { describe, expect, it } from 'vitest';
import { HELP, OPTIONS, parseCli, UsageError } from '../src/cli/args.js';
import { OPTION_HELP } from '../src/cli/option-help.js';
import { subcommandHelp } from '../src/cli/subcommand-help.js';
import { runMain } from './support/cli-main.js';

/** The long options a help lists (`--all`, `--port`), in its order. */
const listed = (help: string): string[] =>
  [...help.matchAll(/^ {2}(?:-\w, )?--([\w-]+)/gm)].map((m) => m[1]!).filter((name) => name !== 'help');

describe('which help --help asks for', () => {
  it('after serve, sessions or worker: that subcommand; anywhere else, or after --: the whole help', () => {
    expect(parseCli(['sessions', '--help'])).toEqual({ kind: 'help', topic: 'sessions' });
    expect(parseCli(['sessions', 'rm', 'x', '--help'])).toEqual({ kind: 'help', topic: 'sessions' });
    expect(parseCli(['serve', '--port', '1', '-h'])).toEqual({ kind: 'help', topic: 'serve' });
    expect(parseCli(['--model', 'm', 'worker', '--help'])).toEqual({ kind: 'help', topic: 'worker' });
    expect(parseCli(['help', 'worker'])).toEqual({ kind: 'help', topic: 'worker' });
    expect(parseCli(['--help'])).toEqual({ kind: 'help' });
    expect(parseCli(['help'])).toEqual({ kind: 'help' });
    expect(parseCli(['fix the tests', '--help'])).toEqual({ kind: 'help' });
    expect(parseCli(['--', 'sessions', '--help'])).toMatchObject({ kind: 'run', options: { task: 'sessions --help' } });
  });

  it.each(['serve', 'worker'] as const)(
    '%s --help leaves out exactly the options the subcommand refuses',
    (command) => {
      const shown = listed(subcommandHelp(command, OPTIONS));
      const left = Object.keys(OPTION_HELP).filter(
        (name) => !shown.includes(name) && !['help', 'version'].includes(name),
      );
      console.log(`${command} --help lists ${shown.join(', ')}; leaves out ${left.join(', ')}`);
      const valued = OPTIONS as Record<string, { type: string }>;
      for (const name of left) {
        const args = [command, `--${name}`, ...(valued[name]!.type === 'string' ? ['x'] : [])];
        if (command === 'worker') args.push('--queue', 'redis://127.0.0.1:6379');
        expect(() => parseCli(args), name).toThrow(UsageError);
      }
      expect(left).toEqual(expect.arrayContaining(['json', 'continue', 'all', 'yes']));
    },
  );
});

describe('what the CLI prints (the bin writes it: test/cli-openai.test.ts starts it with --help)', () => {
  it.each([
    ['sessions', 'Usage: loopctl sessions [list]', ['all', 'yes', 'json', 'cwd', 'store']],
    ['serve', 'Usage: loopctl serve [options]', ['port', 'queue', 'confirm', 'model', 'cwd']],
    ['worker', 'Usage: loopctl worker --queue URL', ['queue', 'model', 'cwd']],
  ])('loopctl %s --help: its usage and its options, not the whole help; exit 0', async (name, usage, options) => {
    const { code, stdout, stderr } = await runMain([name, '--help']);
    console.log(`${name} --help: ${stdout.split('\n').length} lines (the whole help: ${HELP.split('\n').length})`);
    expect(code, stderr).toBe(0);
    expect(stdout.startsWith(usage)).toBe(true);
    expect(stdout).not.toContain('Usage: loopctl [options] "task"');
    expect(stdout).not.toContain('Environment:');
    expect(listed(stdout)).toEqual(expect.arrayContaining(options));
    if (name !== 'serve') expect(listed(stdout)).not.toContain('port');
    if (name === 'sessions') expect(listed(stdout)).not.toContain('model');
    expect(stdout.split('\n').filter((line) => line.length > 80)).toEqual([]);
    expect(stdout).toBe(subcommandHelp(name as 'sessions', OPTIONS));
    expect(stderr).toBe('');
  });

  it('loopctl --help is the whole help, as before', async () => {
    expect(await runMain(['--help'])).toEqual({ code: 0, stdout: HELP, stderr: '' });
  });
});
