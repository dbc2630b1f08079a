/**
 * The package ships `dist/` only (package.json `files`), and tsc writes a source map beside each compiled module.
 * A map is only of use when what it names can be read: each map's `sources` must either lie inside `dist/` or
 * come with its text in `sourcesContent`. Maps that name `../src/*.ts`, which the package does not ship, made every
 * tool that reads them (`node --enable-source-maps` traces, a bundler's source-map loader, a debugger) point at
 * files that are not there.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, repoRoot } from './cli-helpers.js';

beforeAll(() => ensureBuilt(), 180_000);

const dist = path.join(repoRoot, 'dist');

/** The `.js.map` files tsc wrote under `dir` (not the bin's bundle, not the web app's). */
function maps(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory())
      return file === path.join(dist, 'bin') || file === path.join(dist, 'web') ? [] : maps(file);
    return entry.name.endsWith('.js.map') ? [file] : [];
  });
}

describe('the source maps the package ships', () => {
  it('name only sources they carry (sourcesContent) or that lie inside dist/', () => {
    const all = maps(dist);
    const unreadable: string[] = [];
    for (const file of all) {
      const map = JSON.parse(readFileSync(file, 'utf8')) as { sources: string[]; sourcesContent?: unknown[] };
      map.sources.forEach((source, i) => {
        const inside = path.resolve(path.dirname(file), source).startsWith(dist + path.sep);
        if (!inside && typeof map.sourcesContent?.[i] !== 'string')
          unreadable.push(`${path.relative(dist, file)}: ${source}`);
      });
    }
    console.log(`${all.length} maps checked; ${unreadable.length} name a source the package does not hold`);
    expect(all.length).toBeGreaterThan(100);
    expect(unreadable.slice(0, 3)).toEqual([]);
  });
});
