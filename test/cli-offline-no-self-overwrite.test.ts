/**
 * The offline model never overwrites a request's own source silently, whatever name the
 * target has: the offline model asked to summarise README.md into another
 * name of the same file (a symlink to it, a hard link, its absolute path)
 * leaves README.md as it was and says why; a new target is still written.
 * The built bin on a temp folder.
 */
import { linkSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, removeTempFolders, runBin, tempFolder } from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);
afterAll(removeTempFolders);

const README = '# Tool\n\nTool does things. It is small.\n\n## Install\n\nRun the installer.\n';
const SUMMARY = '# Summary of README.md\n\n- **Tool**: Tool does things.\n- **Install**: Run the installer.\n';

describe('the offline model never summarises a file into another name of itself', () => {
  const aliases: Record<string, (dir: string) => string> = {
    'a symlink to it': (dir) => (symlinkSync('README.md', path.join(dir, 'alias.md')), 'alias.md'),
    'a hard link to it': (dir) => (linkSync(path.join(dir, 'README.md'), path.join(dir, 'hard.md')), 'hard.md'),
    'its absolute path': (dir) => path.join(dir, 'README.md'),
  };
  for (const [name, alias] of Object.entries(aliases)) {
    it(`the target is ${name}: README.md is untouched, the answer says why and holds the summary`, async () => {
      const dir = tempFolder({ 'README.md': README });
      const target = alias(dir);
      const { code, stdout, stderr } = await runBin([`summarise README.md into ${target}`], dir).done;
      expect(code, stderr).toBe(0);
      expect(readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe(README);
      expect(stdout).toContain(`I did not write the summary into ${target}: it holds the same text as README.md`);
      expect(stdout).toContain(SUMMARY);
      expect(stderr).not.toContain('[tool] write_file');
    });
  }

  it('a new target is written; one holding other text is replaced, and the answer says so', async () => {
    const dir = tempFolder({ 'README.md': README, 'OLD.md': 'an older summary\n' });
    const fresh = await runBin(['summarise README.md into SUMMARY.md'], dir).done;
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(readFileSync(path.join(dir, 'SUMMARY.md'), 'utf8')).toBe(SUMMARY);
    expect(fresh.stdout).toContain('I wrote a summary of README.md to SUMMARY.md (2 points)');
    expect(fresh.stderr).not.toContain('· failed'); // looking for a target that is not there is no failure
    const replaced = await runBin(['summarise README.md into OLD.md'], dir).done;
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(readFileSync(path.join(dir, 'OLD.md'), 'utf8')).toBe(SUMMARY);
    expect(replaced.stdout).toContain('I wrote a summary of README.md to OLD.md, replacing what it held (2 points)');
    expect(readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe(README);
  });
});
