/**
 * A `search_files` answer is `file:line: text` lines. A file name holding a
 * `:N:` of its own ("x:9: evil.md") would read as another file ("x") and
 * another line (9): the tool writes such a name, and one starting with a
 * quote, as a JSON string, and the offline model reads it back whole, so its
 * answer names the right file and line.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { fsTools } from '../src/node/index.js';
import type { Tool } from '../src/tools/tool.js';
import { plan } from '../src/cli/offline/planner.js';
import { fakeToolContext } from './support/tool-context.js';

let root: string;

async function search(pattern: string): Promise<string> {
  const t = (fsTools(root) as Tool[]).find((x) => x.name === 'search_files')!;
  return (await t.execute((t.parameters as z.ZodType).parse({ pattern }), fakeToolContext())) as string;
}

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'loopctl-search-names-')));
  writeFileSync(join(root, 'x'), 'nothing\n');
  writeFileSync(join(root, 'x:9: evil.md'), 'TODO fix\n');
  writeFileSync(join(root, '"quoted.md'), 'TODO two\n');
  writeFileSync(join(root, 'plain:name.md'), 'TODO three\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('search results whose file name looks like a result', () => {
  it('the tool quotes a name holding ":N:" or starting with a quote; other names stay as they are', async () => {
    expect(await search('TODO')).toBe(
      ['"\\"quoted.md":1: TODO two', 'plain:name.md:1: TODO three', '"x:9: evil.md":1: TODO fix'].join('\n'),
    );
  });

  it('the offline model names the right file and line', async () => {
    const output = await search('TODO');
    const steps = [{ name: 'search_files', args: {}, output, isError: false }];
    const tools = new Set(['search_files']);
    expect(plan({ task: 'find TODO', steps, tools })).toEqual({
      kind: 'text',
      text: [
        '(offline model)',
        '"TODO" appears on 3 lines in 3 files:',
        '"\\"quoted.md"',
        '  1: TODO two',
        'plain:name.md',
        '  1: TODO three',
        '"x:9: evil.md"',
        '  1: TODO fix',
        '',
      ].join('\n'),
    });
  });
});
