/**
 * The layering of src/ (docs/architecture.md, "Layers"), read from the sources with the TypeScript
 * compiler API: every import, `export … from`, `import('…')` type and dynamic import counts, type-only
 * ones included, so a cycle cannot hide behind `import type`.
 * - session/ never imports engine/ (a store knows nothing of the loop that uses it);
 * - the cancel primitives (cancel/) import nothing of the engine;
 * - no import cycle anywhere in src/.
 * The core entry reaching nothing Node-only is pinned by test/isomorphic.test.ts.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/openai-server.js';

const SRC = path.join(repoRoot, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The relative module specifiers `file` imports, resolved to files under src/ (as repo-relative paths). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) specs.push(node.moduleSpecifier.text);
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      if (ts.isLiteralTypeNode(arg) && ts.isStringLiteral(arg.literal)) specs.push(arg.literal.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [first] = node.arguments;
      if (first && ts.isStringLiteral(first)) specs.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specs
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(repoRoot, path.resolve(path.dirname(file), s.replace(/\.js$/, '.ts'))));
}

const graph = new Map(sourceFiles(SRC).map((f) => [path.relative(repoRoot, f), importsOf(f)] as const));

/** Every cycle, each once, as the list of files around it (Tarjan's strongly connected components). */
function cycles(): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const strong = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) !== idx.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      on.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return found;
}

const under = (dir: string) => (file: string) => file.startsWith(`src/${dir}/`);

describe('layering of src/', () => {
  it('reads the whole source tree', () => {
    expect(graph.size).toBeGreaterThan(60);
    expect(graph.get('src/engine/run.ts')).toContain('src/engine/create-run.ts');
  });

  it('session/ never imports engine/', () => {
    const offending = [...graph]
      .filter(([f]) => under('session')(f))
      .flatMap(([f, deps]) => deps.filter(under('engine')).map((d) => `${f} → ${d}`));
    expect(offending).toEqual([]);
  });

  it('cancel/ imports nothing of the engine, the sessions or the models', () => {
    const offending = [...graph]
      .filter(([f]) => under('cancel')(f))
      .flatMap(([f, deps]) =>
        deps.filter((d) => under('engine')(d) || under('session')(d) || under('model')(d)).map((d) => `${f} → ${d}`),
      );
    expect(offending).toEqual([]);
  });

  it('no import cycle anywhere in src/ (type-only imports included)', () => {
    expect(cycles()).toEqual([]);
  });
});
