/**
 * Truthful caps and skips end to end: no self-overwrite, caps with true totals, a large file counted
 * and skipped files reported, with the offline model and the real file tools, on a folder built for them.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, removeTempFolders, runBin, tempFolder } from '../cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const README = '# Project\n\nIt does things. Many things.\n\n## Use\n\nRun it.\n';

function caseFolder(): string {
  const dir = tempFolder({ 'README.md': README, 'notes.txt': 'a needle here\n' });
  mkdirSync(path.join(dir, 'src'));
  for (let i = 0; i < 501; i++)
    writeFileSync(path.join(dir, 'src', `m${String(i).padStart(3, '0')}.ts`), 'export {};\n');
  writeFileSync(path.join(dir, 'big.txt'), 'line of text\n'.repeat(300_000)); // 3.9 MB: over the 256 KiB read cap
  writeFileSync(path.join(dir, 'huge.log'), `needle\n${'z'.repeat(4 * 1024 * 1024)}\n`); // over the 4 MB search cap
  return dir;
}

describe('the offline model and the file tools', () => {
  it('no self-overwrite; caps with true totals; a large file counted; skipped files reported', async () => {
    const dir = caseFolder();
    const self = await runBin(['summarise README.md into README.md'], dir).done;
    expect(self.code, self.stderr).toBe(0);
    expect(readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe(README);
    expect(self.stdout).toContain('I did not write the summary into README.md: it is the file being summarised');
    expect(self.stderr).not.toContain('[tool] write_file');

    const list = await runBin(['list the .ts files'], dir).done;
    expect(list.stdout).toContain(
      'I found 501 .ts files; 200 of them are listed (narrow the folder or pattern for the rest):',
    );
    expect(list.stdout.split('\n').filter((l) => l.startsWith('- src/'))).toHaveLength(200);

    const count = await runBin(['how many lines in big.txt'], dir).done;
    expect(count.code).toBe(0);
    expect(count.stdout).toContain('big.txt has 300000 lines.');
    expect(count.stderr).toContain('[loopctl] completed · 2 turns · 1 tool call');

    const find = await runBin(['find needle'], dir).done;
    expect(find.stdout).toContain(
      '"needle" appears on 1 line in 1 file:\nnotes.txt\n  1: a needle here\nNot searched: 1 file over 4 MB.\n',
    );
    expect(readdirSync(dir).sort()).toEqual(['README.md', 'big.txt', 'huge.log', 'notes.txt', 'src']);
  }, 120_000);
});
