/**
 * eslint skips every folder .gitignore lists. `npm test` runs eslint beside vitest, and specs write files into such
 * folders meanwhile (esbuild bundles of child scripts in .cache/scripts): a folder eslint does not skip is linted
 * when a bundle lands there before eslint lists the files, and `npm test` fails on generated code now and then.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');

/** The folder entries of .gitignore (lines ending in "/"), each glob star replaced by a letter. */
function gitignoredFolders(): string[] {
  return readFileSync(path.join(root, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.endsWith('/') && !line.startsWith('#'))
    .map((line) => line.replaceAll('*', 'x'));
}

describe('eslint and .gitignore', () => {
  it('skips a script in every folder .gitignore lists, and still lints src/', async () => {
    const eslint = new ESLint({ cwd: root });
    const folders = gitignoredFolders();
    expect(folders).toEqual(expect.arrayContaining(['.cache/', 'dist/', 'scratch/']));
    const linted: string[] = [];
    for (const folder of folders) {
      if (!(await eslint.isPathIgnored(path.join(root, folder, 'scripts', 'bundle.mjs')))) linted.push(folder);
    }
    expect(linted).toEqual([]);
    expect(await eslint.isPathIgnored(path.join(root, 'src', 'index.ts'))).toBe(false);
  });
});
