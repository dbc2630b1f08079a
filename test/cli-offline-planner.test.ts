/**
 * The offline model's parts in-process: task shapes, the planner's moves,
 * the extractive summary, the chunk builder, and the signal trap.
 */
import { describe, expect, it } from 'vitest';
import { ChunkBuilder, wordChunks } from '../src/cli/offline/chunks.js';
import { readConversation, type Conversation, type Step } from '../src/cli/offline/conversation.js';
import { parseIntent } from '../src/cli/offline/intent.js';
import { plan } from '../src/cli/offline/planner.js';
import { summarise } from '../src/cli/offline/summary.js';
import { trapStopSignals } from '../src/cli/signals.js';

const ALL_TOOLS = new Set(['list_dir', 'read_file', 'search_files', 'write_file']);
const conv = (task: string, steps: Step[] = [], tools = ALL_TOOLS): Conversation => ({ task, steps, tools });
const step = (name: string, args: Record<string, unknown>, output: string): Step => ({
  name,
  args,
  output,
  isError: output.startsWith('Error:'),
});

describe('parseIntent', () => {
  it.each([
    ['list the .ts files', { kind: 'list', exts: ['ts'], label: '.ts' }],
    ['what markdown files are there?', { kind: 'list', exts: ['md', 'markdown'], label: 'markdown' }],
    ['list all files', { kind: 'list', exts: undefined, label: 'all' }],
    ['how many lines in package.json', { kind: 'count', path: 'package.json' }],
    ['How many lines does src/index.ts have?', { kind: 'count', path: 'src/index.ts' }],
    ['count the lines of "my notes.txt"', { kind: 'count', path: 'my notes.txt' }],
    ['find TODO', { kind: 'find', pattern: 'TODO', path: '.' }],
    ["search for 'fetch(' in src", { kind: 'find', pattern: 'fetch(', path: 'src' }],
    ['find TODO in the files', { kind: 'find', pattern: 'TODO', path: '.' }],
    ['which files contain FIXME?', { kind: 'find', pattern: 'FIXME', path: '.' }],
    ['summarise README.md into SUMMARY.md', { kind: 'summarise', path: 'README.md', target: 'SUMMARY.md' }],
    ['Summarize the file notes.md.', { kind: 'summarise', path: 'notes.md', target: undefined }],
    ['write me a poem', { kind: 'help' }],
  ])('%s', (task, intent) => {
    expect(parseIntent(task)).toEqual(intent);
  });
});

describe('plan', () => {
  it('counts lines, reading on when read_file was cut', () => {
    expect(plan(conv('how many lines in big.txt'))).toEqual({
      kind: 'tool',
      name: 'read_file',
      args: { path: 'big.txt' },
    });
    const cut = step(
      'read_file',
      { path: 'big.txt' },
      'a\nb\n[truncated at 4 bytes: showing lines 1-2; pass startLine=3 to read on]',
    );
    expect(plan(conv('how many lines in big.txt', [cut]))).toEqual({
      kind: 'tool',
      name: 'read_file',
      args: { path: 'big.txt', startLine: 3 },
    });
    const rest = step('read_file', { path: 'big.txt', startLine: 3 }, 'c\nd');
    expect(plan(conv('how many lines in big.txt', [cut, rest]))).toEqual({
      kind: 'text',
      text: '(offline model)\nbig.txt has 4 lines.\n',
    });
    expect(plan(conv('how many lines in e.txt', [step('read_file', {}, '(empty file)')]))).toMatchObject({
      text: expect.stringContaining('e.txt has 0 lines.'),
    });
  });

  it('searches literally and reports a tool error as it is', () => {
    expect(plan(conv('find a.b('))).toEqual({
      kind: 'tool',
      name: 'search_files',
      args: { pattern: 'a\\.b\\(', path: '.' },
    });
    const failed = step('search_files', {}, 'Error: "src": no such file or directory');
    expect(plan(conv('find x in src', [failed]))).toMatchObject({
      text: expect.stringContaining('"src": no such file or directory'),
    });
    expect(plan(conv('find x', [step('search_files', {}, 'no matches')]))).toMatchObject({
      text: '(offline model)\nNo line matches "x".\n',
    });
  });

  it('summarises, writes when it may, and says so when it may not', () => {
    const read = step('read_file', { path: 'R.md' }, '# A\n\nOne. Two.\n');
    const task = 'summarise R.md into S.md';
    // It looks at the target first (its folder's listing, then the file): another name of R.md holds R.md's text.
    expect(plan(conv(task, [read]))).toEqual({ kind: 'tool', name: 'list_dir', args: { path: '.', pattern: 'S.md' } });
    const none = step('list_dir', { path: '.', pattern: 'S.md' }, '(no entries match "S.md")');
    const content = '# Summary of R.md\n\n- **A**: One.\n';
    const write = { kind: 'tool', name: 'write_file', args: { path: 'S.md', content } };
    expect(plan(conv(task, [read, none]))).toEqual(write);
    const listed = step('list_dir', { path: '.', pattern: 'S.md' }, 'S.md');
    expect(plan(conv(task, [read, listed]))).toEqual({ kind: 'tool', name: 'read_file', args: { path: 'S.md' } });
    const same = step('read_file', { path: 'S.md' }, read.output);
    const refused = { text: expect.stringContaining('it holds the same text as R.md') };
    expect(plan(conv(task, [read, listed, same]))).toMatchObject(refused);
    expect(plan(conv(task, [read, listed, step('read_file', { path: 'S.md' }, 'other')]))).toEqual(write);
    // A name a glob would read as a pattern is looked at with a read.
    const globby = plan(conv('summarise R.md into S*.md', [read]));
    expect(globby).toEqual({ kind: 'tool', name: 'read_file', args: { path: 'S*.md' } });
    const readOnly = new Set(['list_dir', 'read_file', 'search_files']);
    expect(plan(conv(task, [read], readOnly))).toMatchObject({ text: expect.stringContaining('read-only') });
  });

  it('needs the tool to be offered', () => {
    expect(plan(conv('find TODO', [], new Set()))).toMatchObject({
      text: expect.stringContaining('search_files tool'),
    });
  });
});

describe('readConversation', () => {
  it('takes the last user message and pairs the tool calls made since with their results', () => {
    const body = {
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'old' },
        { role: 'assistant', content: 'x' },
        { role: 'user', content: [{ type: 'text', text: 'find TODO' }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'search_files', arguments: '{"pattern":"TODO"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a.ts:1: TODO' },
      ],
      tools: [{ type: 'function', function: { name: 'search_files' } }],
    };
    expect(readConversation(body)).toEqual({
      task: 'find TODO',
      steps: [{ name: 'search_files', args: { pattern: 'TODO' }, output: 'a.ts:1: TODO', isError: false }],
      tools: new Set(['search_files']),
    });
    expect(() => readConversation({})).toThrow(/messages/);
  });
});

describe('summarise', () => {
  it('keeps headings and first sentences, skips code, invents nothing', () => {
    const text =
      '# T\n\nFirst [link](http://x) here. Second.\n\n```\n# not a heading\n```\n\n## U\n\n- item one. more\n';
    expect(summarise(text, 'f.md')).toBe('# Summary of f.md\n\n- **T**: First link here.\n- **U**: item one.\n');
    expect(summarise('Plain one. Two.\n\nPara two!\n', 'p.txt')).toBe(
      '# Summary of p.txt\n\n- Plain one.\n- Para two!\n',
    );
  });
});

describe('chunks', () => {
  it('splits words losslessly and streams tool calls as deltas', () => {
    const text = '(offline model)\nHello  big world.\n';
    expect(wordChunks(text).join('')).toBe(text);
    const b = new ChunkBuilder('id1', 'm', 0);
    const [head, ...rest] = b.toolCall(0, 'call_1', 'read_file', '{"path":"a"}');
    expect(head!.choices[0]!.delta).toEqual({
      tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '' } }],
    });
    expect(rest.map((c) => (c.choices[0]!.delta as any).tool_calls[0].function.arguments).join('')).toBe(
      '{"path":"a"}',
    );
    expect(b.usage({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 })).toMatchObject({
      choices: [],
      usage: { total_tokens: 3 },
    });
  });
});

describe('trapStopSignals', () => {
  it('calls onFirst for the first signal, onSecond for the next, and detaches', () => {
    const seen: string[] = [];
    const before = process.listenerCount('SIGINT');
    const untrap = trapStopSignals(
      (s) => seen.push(`first ${s}`),
      (s) => seen.push(`second ${s}`),
    );
    process.emit('SIGTERM');
    process.emit('SIGINT');
    untrap();
    expect(seen).toEqual(['first SIGTERM', 'second SIGINT']);
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
