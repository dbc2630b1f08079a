import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from './cli-helpers.js';
import { repoRoot } from './support/openai-server.js';

const run = promisify(execFile);

/**
 * The examples and the README block run as a user runs them, one process each, against the built package: `dist/`
 * (built once, shared with the CLI specs) imported by name through the package's own exports. Each script is
 * transpiled to `.mjs` inside `examples/` so that `loopctl` resolves to this package; a plain `node` start costs
 * a third of a `tsx` one.
 */
let buildDir = '';
beforeAll(async () => {
  await ensureBuilt();
  buildDir = mkdtempSync(path.join(repoRoot, 'examples', '.build-'));
}, 180_000);
afterAll(() => rmSync(buildDir, { recursive: true, force: true }));

/** Transpiles TypeScript `source` to `<name>.mjs`, runs it with node in the repository root, returns its stdout. */
async function runScript(name: string, source: string): Promise<string> {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: `${name}.ts`,
  });
  const file = path.join(buildDir, `${name}.mjs`);
  writeFileSync(file, outputText);
  const { stdout } = await run(process.execPath, [file], { cwd: repoRoot, timeout: 30_000 });
  return stdout;
}

/** Runs `examples/<name>.ts` (the README runs it with `npx tsx`) and returns its stdout lines. */
async function lines(file: string): Promise<string[]> {
  const name = path.basename(file, '.ts');
  return (await runScript(name, readFileSync(path.join(repoRoot, file), 'utf8'))).trim().split('\n');
}

describe.concurrent('examples/ run as documented', () => {
  it('stop-button.ts: a cancel$ emission stops the run mid-tool', async () => {
    expect(await lines('examples/stop-button.ts')).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'model_response_completed',
      'tool_call_started',
      'run_cancelled',
      'stopped at tool_call: stop button clicked',
    ]);
  });

  it('steering.ts: a line typed during the tool lands in the next model request', async () => {
    const out = await lines('examples/steering.ts');
    expect(out[0]).toBe('steering injected at turn 2: Focus on the 5xx spike around 14:00.');
    expect(out[1]).toBe('answer: The 5xx spike at 14:00 came from the payment service.');
    expect(out[2]?.replace(/"id":"[^"]+"/, '"id":"…"')).toBe(
      'the second model request ends with: {"type":"user","id":"…","text":"Focus on the 5xx spike around 14:00."}',
    );
  });

  it('approvals.ts: approved while the run waits; suspended, saved as JSON, resumed with a rejection', async () => {
    expect(await lines('examples/approvals.ts')).toEqual([
      'asked: deploy {"service":"api"}',
      'result: api deployed',
      'answer: The api is live.',
      'suspended: deploy; session items: 0',
      'rejected: the call was rejected: no deploys on Fridays',
      'answer: I did not deploy: it is Friday.; session items: 4',
    ]);
  });

  it('abort-signal.ts: AbortSignal.timeout cancels the run', async () => {
    expect(await lines('examples/abort-signal.ts')).toEqual(['cancelled at tool_call by TimeoutError']);
  });

  it('stop-after-step.ts: a graceful stop lets the step finish, then the run ends stopped and saved', async () => {
    expect(await lines('examples/stop-after-step.ts')).toEqual([
      'stop requested at turn_end',
      'migrated users',
      'migrated orders',
      'stopped: Migrating users and orders first.',
      '4 items saved',
    ]);
  });

  it('cancel-tool-call.ts: one call is cancelled before cancelToolCall() returns; the run goes on', async () => {
    expect(await lines('examples/cancel-tool-call.ts')).toEqual([
      'archive: ToolCallCancelledError: cancelled by the user: taking too long (interrupted: true)',
      'cancelToolCall returned true',
      'web: results from web',
      'completed: Answered from the web results; the archive search was cancelled.',
    ]);
  });

  it('structured-output.ts: a refused answer gets a repair turn; the second streams partial values', async () => {
    expect(await lines('examples/structured-output.ts')).toEqual([
      'turn 1',
      'turn 2',
      'partial: {"city":"Oslo"}',
      'partial: {"city":"Oslo","highC":9}',
      'partial: {"city":"Oslo","highC":9,"summary":"Grey, light rain"}',
      'repair turn: Your answer was refused: the answer does not match the schema:',
      'Oslo: 9 °C, Grey, light rain',
    ]);
  });

  it('commit-partial.ts: the partial is committed and the steering withdrawn', async () => {
    const out = await lines('examples/commit-partial.ts');
    expect(out.slice(0, 2)).toEqual([
      'session before commit: 0 items',
      'committed 3 items; withdrawn from the mailbox: 1',
    ]);
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
    const stdout = await runScript('readme', block!);
    expect(stdout.trim()).toBe('2 + 3 = 5\n[stop] 4 items saved');
  });
});
