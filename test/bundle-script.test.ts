/**
 * test/support/bundle-script.ts: a script rewritten at the same path runs as rewritten (the bundle is made again), and
 * `.cache/scripts/` does not grow without bound: specs bundle scripts they write into temporary folders, whose bundles
 * (named by a hash that takes in the folder's path) are never asked for again; a bundle that no start used for an
 * hour is removed when a new one is written.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledScript } from './support/bundle-script.js';
import { repoRoot } from './support/openai-server.js';

const dir = mkdtempSync(path.join(tmpdir(), 'loopctl-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const runNode = (file: string): string => execFileSync(process.execPath, [file], { encoding: 'utf8' });

describe('bundledScript', () => {
  it('bundles a script again when it was rewritten at the same path', async () => {
    const script = path.join(dir, 'says.ts');
    writeFileSync(script, `const word: string = 'first';\nconsole.log(word);\n`);
    expect(runNode(await bundledScript(script))).toBe('first\n');
    writeFileSync(script, `const word: string = 'second';\nconsole.log(word);\n`);
    expect(runNode(await bundledScript(script))).toBe('second\n');
  });

  it('removes the bundles no start used for an hour when it writes one; recent ones stay', async () => {
    const out = path.join(repoRoot, '.cache', 'scripts');
    mkdirSync(out, { recursive: true });
    const stale = path.join(out, `stale-spec-${process.pid}.mjs`);
    const recent = path.join(out, `recent-spec-${process.pid}.mjs`);
    writeFileSync(stale, '');
    writeFileSync(recent, '');
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    utimesSync(stale, twoHoursAgo, twoHoursAgo);
    const script = path.join(dir, 'fresh.ts');
    writeFileSync(script, `console.log(${JSON.stringify(String(process.pid))});\n`);
    await bundledScript(script);
    expect({ stale: existsSync(stale), recent: existsSync(recent) }).toEqual({ stale: false, recent: true });
    rmSync(recent);
  });
});
