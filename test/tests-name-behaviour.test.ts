/**
 * Tests name the behaviour they pin, never ids of cases kept outside the repository (a C and two digits): a reader of a
 * title or a comment must not need a list nobody can see. Scans test/, marbles/, src/ and docs/.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/openai-server.js';

const CASE_ID = /\b(?:case )?C\d{2}\b/g;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'fixtures') return [];
    return statSync(full).isDirectory() ? files(full) : /\.(ts|tsx|md)$/.test(name) ? [full] : [];
  });
}

describe('no test, source or doc cites a case id defined outside the repository', () => {
  it('finds an id in a title, and none in test/, marbles/, src/ or docs/', () => {
    const id = ['C', '36'].join(''); // spelled in pieces, so this file does not cite one itself
    expect(`describe('${id}: errors name their cause')`.match(CASE_ID)).toEqual([id]);
    const found = ['test', 'marbles', 'src', 'docs'].flatMap((top) =>
      files(path.join(repoRoot, top)).flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(CASE_ID)].map((m) => `${path.relative(repoRoot, file)}: ${m[0]}`),
      ),
    );
    expect(found).toEqual([]);
  });
});
