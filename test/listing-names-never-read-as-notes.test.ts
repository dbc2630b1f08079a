/**
 * Every cap is stated with the true total, and a listing's own notes start
 * with "[" or "(" ("[showing 200 of 501 entries …]", "(empty folder)"). A
 * file whose name starts the same way ("[WIP] plan.md", "(old) notes.md")
 * is written as a JSON string by list_dir, so the offline model counts and
 * lists it like any other file instead of hiding it or showing it as a note.
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

async function listMarkdown(): Promise<string> {
  const t = (fsTools(root) as Tool[]).find((x) => x.name === 'list_dir')!;
  const args = (t.parameters as z.ZodType).parse({ path: '.', recursive: true, pattern: '*.md' });
  return (await t.execute(args, fakeToolContext())) as string;
}

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'loopctl-listing-names-')));
  for (const name of ['[WIP] plan.md', '(old) notes.md', 'real.md']) writeFileSync(join(root, name), 'x\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('file names that start like a listing note', () => {
  it('list_dir writes them as JSON strings', async () => {
    expect(await listMarkdown()).toBe('"(old) notes.md"\n"[WIP] plan.md"\nreal.md');
  });

  it('the offline model counts and lists all three', async () => {
    const steps = [{ name: 'list_dir', args: {}, output: await listMarkdown(), isError: false }];
    expect(plan({ task: 'list the .md files', steps, tools: new Set(['list_dir']) })).toEqual({
      kind: 'text',
      text: '(offline model)\nI found 3 .md files:\n- "(old) notes.md"\n- "[WIP] plan.md"\n- real.md\n',
    });
  });
});
