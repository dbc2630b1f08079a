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
  const ISOMORPHIC = [
    'src/index.ts',
    'src/testing/index.ts',
    'src/ag-ui/index.ts',
    'src/operators/index.ts',
    'src/otel/index.ts',
    'src/model/gemini/index.ts',
    'src/anthropic/index.ts',
  ];
  for (const entry of ISOMORPHIC) {
    it(`${entry} reaches no node:* module and no Node-only package`, () => {
      const modules = graph(path.join(repoRoot, entry));
      expect(modules.size).toBeGreaterThan(entry === 'src/index.ts' ? 20 : entry === 'src/operators/index.ts' ? 4 : 2);
      const offending = [...modules].flatMap(([file, specs]) =>
        specs
          .filter(
            (s) =>
              s.startsWith('node:') ||
              /^(fs|path|os|child_process|http|net)$/.test(s) ||
              s.includes('/stdio') ||
              s.includes('streamableHttp'),
          )
          .map((s) => `${path.relative(repoRoot, file)} → ${s}`),
      );
      expect(offending).toEqual([]);
    });
  }

  it('loopctl and loopctl/testing never load the optional peers (@ag-ui/*): only loopctl/ag-ui and loopctl/http do', () => {
    for (const entry of ['src/index.ts', 'src/testing/index.ts']) {
      const specs = [...graph(path.join(repoRoot, entry)).values()].flat();
      expect(specs.filter((s) => s.startsWith('@ag-ui/'))).toEqual([]);
    }
    const agUi = [...graph(path.join(repoRoot, 'src/ag-ui/index.ts')).values()].flat();
    expect(new Set(agUi.filter((s) => s.startsWith('@ag-ui/')))).toEqual(new Set(['@ag-ui/core']));
  });

  it('the loopctl command loads the optional peers (@ag-ui/*) only for loopctl serve, on demand', () => {
    const cli = [...graph(path.join(repoRoot, 'src/cli/app.ts')).values()].flat();
    expect(cli.filter((s) => s.startsWith('@ag-ui/'))).toEqual([]);
    const serve = [...graph(path.join(repoRoot, 'src/cli/serve/command.ts')).values()].flat();
    expect(new Set(serve.filter((s) => s.startsWith('@ag-ui/')))).toEqual(
      new Set(['@ag-ui/core', '@ag-ui/core/schemas', '@ag-ui/encoder']),
    );
  });

  it('the core never imports @opentelemetry: only loopctl/otel does, and only @opentelemetry/api', () => {
    const entries = [
      'src/index.ts',
      'src/testing/index.ts',
      'src/node/index.ts',
      'src/node/testing/index.ts',
      'src/ag-ui/index.ts',
      'src/http/index.ts',
      'src/operators/index.ts',
      'src/sqlite/index.ts',
      'src/postgres/index.ts',
      'src/bullmq/index.ts',
    ];
    for (const entry of entries) {
      const specs = [...graph(path.join(repoRoot, entry)).values()].flat();
      expect({ entry, otel: specs.filter((s) => s.startsWith('@opentelemetry/')) }).toEqual({ entry, otel: [] });
    }
    const otel = [...graph(path.join(repoRoot, 'src/otel/index.ts')).values()].flat();
    expect(new Set(otel.filter((s) => s.startsWith('@opentelemetry/')))).toEqual(new Set(['@opentelemetry/api']));
  });

  it('only loopctl/anthropic loads the optional peer @anthropic-ai/sdk (the command, on demand)', () => {
    for (const entry of ['src/index.ts', 'src/testing/index.ts', 'src/node/index.ts', 'src/http/index.ts']) {
      const specs = [...graph(path.join(repoRoot, entry)).values()].flat();
      expect({ entry, sdk: specs.filter((s) => s.startsWith('@anthropic-ai/')) }).toEqual({ entry, sdk: [] });
    }
    const cli = [...graph(path.join(repoRoot, 'src/cli/app.ts')).values()].flat();
    expect(cli.filter((s) => s.startsWith('@anthropic-ai/'))).toEqual([]);
    expect(packagesOf('src/anthropic/index.ts')).toContain('@anthropic-ai/sdk');
  });

  it('the node entry is where Node-only code lives', () => {
    const modules = graph(path.join(repoRoot, 'src/node/index.ts'));
    expect([...modules.values()].flat().some((s) => s.startsWith('node:'))).toBe(true);
  });
});

/** The bare specifiers (packages) every module reachable from `entry` imports. */
function packagesOf(entry: string): string[] {
  const specs = [...graph(path.join(repoRoot, entry)).values()].flat();
  return [
    ...new Set(
      specs.map((s) =>
        s
          .split('/')
          .slice(0, s.startsWith('@') ? 2 : 1)
          .join('/'),
      ),
    ),
  ].sort();
}

describe('native and driver modules load only through their own entries', () => {
  for (const entry of [
    'src/index.ts',
    'src/testing/index.ts',
    'src/node/index.ts',
    'src/node/testing/index.ts',
    'src/http/index.ts',
    'src/postgres/index.ts',
    'src/sqlite/index.ts',
  ]) {
    it(`${entry} reaches neither better-sqlite3 nor pg (beyond its own), nor bullmq/ioredis, nor a test framework`, () => {
      const packages = packagesOf(entry);
      const own = entry.includes('postgres') ? ['pg'] : entry.includes('sqlite') ? ['better-sqlite3'] : [];
      const banned = ['better-sqlite3', 'pg', 'bullmq', 'ioredis', 'vitest', 'jest', 'mocha'];
      expect(packages.filter((p) => banned.includes(p) && !own.includes(p))).toEqual([]);
    });
  }

  it('loopctl/bullmq reaches bullmq and its bundled ioredis, and no other driver', () => {
    const packages = packagesOf('src/bullmq/index.ts');
    expect(packages.filter((p) => ['bullmq', 'ioredis', 'pg', 'better-sqlite3'].includes(p))).toEqual([
      'bullmq',
      'ioredis',
    ]);
  });

  it('loopctl/sqlite reaches better-sqlite3 and not pg; loopctl/postgres reaches pg only for its types', () => {
    const drivers = (entry: string) => packagesOf(entry).filter((p) => p === 'better-sqlite3' || p === 'pg');
    expect(drivers('src/sqlite/index.ts')).toEqual(['better-sqlite3']);
    expect(drivers('src/postgres/index.ts')).toEqual(['pg']);
    // `import type` only: the pool is the caller's, so the entry never loads pg itself.
    const runtime = [...graph(path.join(repoRoot, 'src/postgres/index.ts')).keys()].filter((file) =>
      /^\s*import\s+(?!type\b)[^;]*from\s+'pg'/m.test(readFileSync(file, 'utf8')),
    );
    expect(runtime).toEqual([]);
  });
});
