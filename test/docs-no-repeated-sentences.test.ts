/**
 * The README and docs/ never say a sentence twice: an edit that pastes a paragraph again (or leaves the old
 * wording next to the new) fails here. Prose only: code blocks, table rows and headings are left out; a
 * sentence is repeated when it appears whole inside another sentence of the same file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/openai-server.js';

/** The sentences of a Markdown file's prose with at least six words, whitespace collapsed. */
function sentences(markdown: string): string[] {
  const prose = markdown
    .replace(/```[\s\S]*?```/g, '\n\n')
    .replace(/^\|.*$/gm, '\n')
    .replace(/^#.*$/gm, '\n');
  return prose
    .split(/\n\s*\n/)
    .flatMap((paragraph) =>
      paragraph
        .replace(/\s+/g, ' ')
        .trim()
        .split(/(?<=[.!?])\s+(?=[A-Z(`*[])/),
    )
    .filter((sentence) => sentence.split(' ').length >= 6);
}

/** Each sentence that appears again, whole, in another sentence of the list (reported once). */
function repeated(list: readonly string[]): string[] {
  return list.filter((s, i) => list.some((t, k) => k !== i && t.includes(s) && (t !== s || k < i)));
}

const files = [
  'README.md',
  ...readdirSync(path.join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('no sentence is said twice in the README or docs/', () => {
  it('the check finds a pasted-again sentence, also inside a longer one, and ignores code and tables', () => {
    const text = [
      'A first word is a subcommand, else it is part of the task (`loopctl -- serve the docs`, `loopctl x`).',
      '(`loopctl -- serve the docs`, `loopctl x`). Serve takes the model and tool options, and no task.',
      '',
      '```sh',
      'the same line in a code block is a code block',
      'the same line in a code block is a code block',
      '```',
      '| a row of a table with six words | x |',
      '| a row of a table with six words | x |',
    ].join('\n');
    expect(repeated(sentences(text))).toEqual(['(`loopctl -- serve the docs`, `loopctl x`).']);
  });

  for (const file of files) {
    it(file, () => {
      expect(repeated(sentences(readFileSync(path.join(repoRoot, file), 'utf8')))).toEqual([]);
    });
  }
});
