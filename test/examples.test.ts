import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/openai-server.js';

const run = promisify(execFile);
const tsx = path.join(repoRoot, 'node_modules/.bin/tsx');

/** Runs a script the way the README says (`npx tsx FILE`) and returns its stdout lines. */
async function lines(file: string): Promise<string[]> {
  const { stdout } = await run(tsx, [file], { cwd: repoRoot, timeout: 30_000 });
  return stdout.trim().split('\n');
}

describe.concurrent('examples/ run as documented', () => {
  it('stop-button.ts: a cancel$ emission stops the run mid-tool', async () => {
    expect(await lines('examples/stop-button.ts')).toEqual([
      'run_started', 'turn_started', 'model_request_started', 'model_response_completed', 'tool_call_started', 'run_cancelled',
      'stopped at tool_call: stop button clicked',
    ]);
  });

  it('steering.ts: a line typed during the tool lands in the next model request', async () => {
    const out = await lines('examples/steering.ts');
    expect(out[0]).toBe('steering injected at turn 2: Focus on the 5xx spike around 14:00.');
    expect(out[1]).toBe('answer: The 5xx spike at 14:00 came from the payment service.');
    expect(out[2]).toMatch(/^the second model request ends with: \{"type":"user","id":"[^"]+","text":"Focus on the 5xx spike around 14:00."\}$/);
  });

  it('abort-signal.ts: AbortSignal.timeout cancels the run', async () => {
    expect(await lines('examples/abort-signal.ts')).toEqual(['cancelled at tool_call by TimeoutError']);
  });

  it('commit-partial.ts: the partial is committed and the steering withdrawn', async () => {
    const out = await lines('examples/commit-partial.ts');
    expect(out.slice(0, 2)).toEqual(['session before commit: 0 items', 'committed 3 items; withdrawn from the mailbox: 1']);
    expect(out.slice(2).map((l) => JSON.parse(l))).toEqual([
      { type: 'user', id: expect.any(String), text: 'Write in French.' },
      { type: 'user', id: expect.any(String), text: 'Write a greeting' },
      { type: 'assistant', id: expect.any(String), text: 'Hello world', toolCalls: [], interrupted: true },
    ]);
  });
});

describe('README', () => {
  it('its TypeScript example runs and prints the documented result', async () => {
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const dir = mkdtempSync(path.join(repoRoot, 'examples', '.readme-'));
    const file = path.join(dir, 'readme.ts');
    writeFileSync(file, block!);
    try {
      const { stdout } = await run(tsx, [file], { cwd: repoRoot, timeout: 30_000 });
      expect(stdout.trim()).toBe('2 + 3 = 5\n[stop] 4 items saved');
    } finally {
      (await import('node:fs')).rmSync(dir, { recursive: true, force: true });
    }
  });
});
