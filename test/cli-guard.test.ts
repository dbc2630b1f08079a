/**
 * `loopctl --guard <pattern>` (docs/guardrails.md, "The CLI"): the option parses into a case-insensitive pattern
 * (a bad one is a usage error), and the CLI's agent on the offline model refuses a task that matches it before any
 * request (nothing is sent, nothing saved) and an answer that matches it without showing a word of it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAgent } from '../src/cli/agent.js';
import { parseCli, UsageError, type CliOptions } from '../src/cli/args.js';
import { startOfflineModel, type OfflineModel } from '../src/cli/offline/server.js';
import { MemorySession, openaiChat, run } from '../src/index.js';
import { collectEvents } from '../src/testing/index.js';

let offline: OfflineModel;
let dir: string;
beforeAll(async () => {
  offline = await startOfflineModel({ delayMs: 0 });
  dir = mkdtempSync(path.join(tmpdir(), 'loopctl-guard-'));
  writeFileSync(path.join(dir, 'notes.txt'), 'one\ntwo\nthree\n');
});
afterAll(async () => {
  await offline.close();
  rmSync(dir, { recursive: true, force: true });
});

const optionsOf = (argv: string[]): CliOptions => {
  const command = parseCli(argv, {}, false);
  if (command.kind !== 'run') throw new Error(`not a run: ${command.kind}`);
  return command.options;
};

describe('--guard', () => {
  it('parses into a case-insensitive pattern; an empty or broken one is a usage error', () => {
    expect(optionsOf(['--guard', 'secret', 'x']).guard).toEqual(/secret/i);
    expect(optionsOf(['x'])).not.toHaveProperty('guard');
    expect(() => optionsOf(['--guard', '', 'x'])).toThrow(UsageError);
    expect(() => optionsOf(['--guard', '(', 'x'])).toThrow(/^option --guard is not a regular expression/);
  });

  const agentFor = (pattern: string) => {
    const options = optionsOf(['--guard', pattern, '--cwd', dir, 'x']);
    const provider = openaiChat({ model: offline.model, baseURL: offline.baseURL, apiKey: 'offline' });
    return cliAgent(options, { provider, label: 'offline' } as never);
  };

  it('a task that matches is refused before any request; nothing is saved', async () => {
    const session = new MemorySession();
    const events = await collectEvents(run(agentFor('PASSWORD'), 'print the password file', { session }));
    expect(events.some((e) => e.type === 'model_request_started')).toBe(false);
    expect(events.find((e) => e.type === 'guardrail_tripped')).toMatchObject({
      name: 'guard',
      kind: 'input',
      output: { matched: 'password' },
    });
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'guardrail' });
    expect(session.items).toEqual([]);
  });

  it('an answer that matches is withheld: no word of it reaches the subscriber', async () => {
    const session = new MemorySession();
    const events = await collectEvents(run(agentFor('3 lines'), 'how many lines in notes.txt', { session }));
    expect(events.some((e) => e.type === 'tool_call_completed')).toBe(true); // the model read the file first
    const shown = events.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('');
    expect(shown).toBe('(offline model)\n'); // its first line passed; the refused sentence never came
    expect(shown).not.toMatch(/3 lines/);
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'guardrail' });
    expect(session.items).toEqual([]);
  });

  it('an answer that does not match is shown whole and saved', async () => {
    const session = new MemorySession();
    const events = await collectEvents(run(agentFor('PASSWORD'), 'how many lines in notes.txt', { session }));
    const shown = events.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('');
    expect(shown).toBe('(offline model)\nnotes.txt has 3 lines.\n');
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: shown });
    expect(session.items.length).toBeGreaterThan(0);
  });
});
