/**
 * The README and docs/ never say a sentence twice: an edit that pastes a paragraph again (or leaves the old
 * wording next to the new), in the same file or in another one, fails here. Prose only: code blocks, table rows
 * and headings are left out; a sentence is repeated when it appears whole inside another sentence of the same
 * file, or of any other file of README.md and docs/*.md (a fact is said once, in the page it belongs to, and
 * linked from the others).
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

/**
 * Each sentence of one file that appears again, whole, in a sentence of other files, as
 * `file: sentence (also in other, …)`; a sentence copied exactly is reported once, at the first file.
 */
function repeatedAcross(texts: Readonly<Record<string, string>>): string[] {
  const all = Object.entries(texts).flatMap(([file, text]) => sentences(text).map((sentence) => ({ file, sentence })));
  return all.flatMap(({ file, sentence }) => {
    if (all.some((b) => b.sentence === sentence && b.file < file)) return [];
    const others = new Set(all.filter((b) => b.file !== file && b.sentence.includes(sentence)).map((b) => b.file));
    return others.size === 0 ? [] : [`${file}: ${sentence} (also in ${[...others].join(', ')})`];
  });
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

  it('the check across files finds a sentence of one file inside a sentence of another, and names both files', () => {
    const texts = {
      'a.md': 'The first run is saved in the store once it completes. Nothing else is here to see at all.',
      'b.md': [
        'As said before: The first run is saved in the store once it completes.',
        '',
        '```',
        'Nothing else is here to see at all.',
        '```',
      ].join('\n'),
      'c.md': 'The first run is saved in the store once it completes.',
    };
    expect(repeatedAcross(texts)).toEqual([
      'a.md: The first run is saved in the store once it completes. (also in b.md, c.md)',
    ]);
    expect(repeatedAcross({ 'a.md': texts['a.md'], 'd.md': 'A different sentence of six words or more.' })).toEqual([]);
  });

  it('no sentence of one file is said again in another (README.md and docs/*.md)', () => {
    const texts = Object.fromEntries(files.map((file) => [file, readFileSync(path.join(repoRoot, file), 'utf8')]));
    expect(repeatedAcross(texts)).toEqual([]);
  });

  for (const file of files) {
    it(file, () => {
      expect(repeated(sentences(readFileSync(path.join(repoRoot, file), 'utf8')))).toEqual([]);
    });
  }
});
