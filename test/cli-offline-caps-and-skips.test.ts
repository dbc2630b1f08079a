/**
 * The offline model states what its tools capped and skipped, counts a
 * large file's lines with one read (the tool counts them by streaming), and
 * never overwrites the file it was asked to summarise.
 */
import { describe, expect, it } from 'vitest';
import type { Conversation, Step } from '../src/cli/offline/conversation.js';
import { plan } from '../src/cli/offline/planner.js';

const ALL_TOOLS = new Set(['list_dir', 'read_file', 'search_files', 'write_file']);
const conv = (task: string, steps: Step[] = []): Conversation => ({ task, steps, tools: ALL_TOOLS });
const step = (name: string, args: Record<string, unknown>, output: string): Step => ({
  name,
  args,
  output,
  isError: false,
});
const text = (body: string) => ({ kind: 'text', text: `(offline model)\n${body}\n` });

describe('the offline model and the file tools', () => {
  it('refuses to summarise a file into itself, however the name is spelled, and shows the summary instead', () => {
    const read = step('read_file', { path: 'README.md' }, '# A\n\nOne. Two.\n');
    const into = ['README.md', 'README.md', 'docs/../README.md'];
    const tasks = ['README.md', './README.md', 'README.md'].map((from, i) => `summarise ${from} into ${into[i]}`);
    for (const task of tasks) {
      const reply = plan(conv(task, [read]));
      expect(reply.kind, task).toBe('text');
      expect(reply).toMatchObject({ text: expect.stringContaining('I did not write the summary into') });
      expect(reply).toMatchObject({ text: expect.stringContaining('# Summary of') });
    }
  });

  it('states the true total when the listing was capped ("200 of 501"), and what it did not list', () => {
    const names = Array.from({ length: 200 }, (_, i) => `src/f${String(i).padStart(3, '0')}.ts`);
    const output = [
      ...names,
      '[showing 200 of 501 entries (501 files, 0 folders); narrow the path or pattern]',
      '[skipped folders: .git, node_modules]',
    ].join('\n');
    const reply = plan(conv('list the .ts files', [step('list_dir', {}, output)]));
    const lines = (reply as { text: string }).text.split('\n');
    const head = 'I found 501 .ts files; 200 of them are listed (narrow the folder or pattern for the rest):';
    expect(lines.slice(0, 2)).toEqual(['(offline model)', head]);
    expect(lines.slice(2, 202)).toEqual(names.map((n) => `- ${n}`));
    expect(lines.slice(202)).toEqual(['Not listed: the folders .git, node_modules.', '']);
  });

  it('counts a large file with one read: the tool gave the true line count', () => {
    const note = '[truncated at 4 bytes: showing lines 1-2 of 300000; pass startLine=3 to read on]';
    const cut = step('read_file', { path: 'big.txt' }, `a\nb\n${note}`);
    expect(plan(conv('how many lines in big.txt', [cut]))).toEqual(text('big.txt has 300000 lines.'));
  });

  it('states the true number of matches when the search was capped, and the files it skipped and why', () => {
    const output = [
      'a.ts:1: TODO one',
      'b.ts:4: TODO two',
      '[showing 2 of 537 matching lines; narrow the pattern, path or glob]',
      '[skipped: 3 files over 4 MB, 1 binary file]',
    ].join('\n');
    expect(plan(conv('find TODO', [step('search_files', {}, output)]))).toEqual(
      text(
        [
          '"TODO" appears on 537 lines; the first 2, in 2 files, are shown:',
          'a.ts',
          '  1: TODO one',
          'b.ts',
          '  4: TODO two',
          'Not searched: 3 files over 4 MB, 1 binary file.',
        ].join('\n'),
      ),
    );
    expect(plan(conv('find zzz', [step('search_files', {}, 'no matches\n[skipped: 1 file over 4 MB]')]))).toEqual(
      text('No line matches "zzz".\nNot searched: 1 file over 4 MB.'),
    );
  });
});
