/**
 * The names loopctl/otel records are those of the pinned `@opentelemetry/semantic-conventions`
 * (1.45.0, incubating entry): src/otel/semconv.ts copies them (the package's advice for incubating
 * names), and every copy equals the package's constant. docs/telemetry.md lists every attribute.
 */
import { readFileSync } from 'node:fs';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import * as ours from '../src/otel/semconv.js';
import { repoRoot } from './support/openai-server.js';

const pkg = JSON.parse(readFileSync(`${repoRoot}/package.json`, 'utf8')) as { devDependencies: Record<string, string> };

describe('src/otel/semconv.ts: the GenAI and MCP names of the pinned semantic conventions', () => {
  it('pins @opentelemetry/semantic-conventions 1.45.0, the release docs/telemetry.md names', () => {
    expect(pkg.devDependencies['@opentelemetry/semantic-conventions']).toBe('1.45.0');
    const doc = readFileSync(`${repoRoot}/docs/telemetry.md`, 'utf8');
    expect(doc).toContain('`@opentelemetry/semantic-conventions` 1.45.0');
  });

  it('every copied constant (all but loopctl.*) equals the package constant of the same name', () => {
    const copied = Object.entries(ours).filter(([, v]) => !String(v).startsWith('loopctl.'));
    expect(copied.length).toBe(29);
    for (const [name, value] of copied) {
      expect({ name, value }).toEqual({ name, value: (incubating as Record<string, unknown>)[name] });
    }
  });

  it('docs/telemetry.md lists every attribute, metric and span event loopctl/otel records', () => {
    const doc = readFileSync(`${repoRoot}/docs/telemetry.md`, 'utf8');
    const missing = Object.values(ours).filter((name) => !doc.includes(`\`${String(name)}\``));
    expect(missing).toEqual([]);
  });
});
