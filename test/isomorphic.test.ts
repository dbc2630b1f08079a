import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/openai-server.js';

/** Every module reachable from `file` through relative imports, with the bare specifiers each imports. */
function graph(file: string, seen = new Map<string, string[]>()): Map<string, string[]> {
  if (seen.has(file)) return seen;
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/g)].map((m) => m[1]!);
  const bare: string[] = [];
  seen.set(file, bare);
  for (const spec of specs) {
    if (spec.startsWith('.')) graph(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')), seen);
    else bare.push(spec);
  }
  return seen;
}

describe('the loopctl core entry is isomorphic: Node-only code lives in loopctl/node', () => {
  for (const entry of ['src/index.ts', 'src/testing/index.ts', 'src/operators/index.ts']) {
    it(`${entry} reaches no node:* module and no Node-only package`, () => {
      const modules = graph(path.join(repoRoot, entry));
      expect(modules.size).toBeGreaterThan(entry === 'src/index.ts' ? 20 : entry === 'src/operators/index.ts' ? 4 : 2);
      const offending = [...modules].flatMap(([file, specs]) =>
        specs.filter((s) => s.startsWith('node:') || /^(fs|path|os|child_process|http|net)$/.test(s) || s.includes('/stdio') || s.includes('streamableHttp')).map((s) => `${path.relative(repoRoot, file)} → ${s}`),
      );
      expect(offending).toEqual([]);
    });
  }

  it('the node entry is where Node-only code lives', () => {
    const modules = graph(path.join(repoRoot, 'src/node/index.ts'));
    expect([...modules.values()].flat().some((s) => s.startsWith('node:'))).toBe(true);
  });
});
