/**
 * `loopctl serve`'s agents: the page's setting "Ask before writes and shell commands" can only make runs
 * stricter than the command line. Without `--confirm` the server offers the plain agent and the asking one
 * (`loopctl-ask`: write_file and run_shell wait for a decision); with `--confirm` only the asking `loopctl`, so
 * no request can start a run that writes without asking; with no tool that would ask, no asking agent. The
 * page's side (src/web/ask-setting.ts) picks the agent and keeps the setting.
 */
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCli } from '../src/cli/args.js';
import type { SelectedModel } from '../src/cli/model.js';
import { ASKING_AGENT, serveAgents } from '../src/cli/serve/agents.js';
import { scriptedModel } from '../src/testing/index.js';
import { run, RunControl, type Agent, type RunEvent } from '../src/index.js';
import { ASK_KEY, AskSetting } from '../src/web/ask-setting.js';

const folders: string[] = [];
afterAll(() => folders.forEach((f) => rmSync(f, { recursive: true, force: true })));

function serve(flags: string[]) {
  const cwd = mkdtempSync(path.join(tmpdir(), 'loopctl-serve-agents-'));
  folders.push(cwd);
  const command = parseCli(['serve', '--cwd', cwd, ...flags]);
  if (command.kind !== 'serve') throw new Error('not serve');
  const write = { name: 'write_file', arguments: { path: 'a.md', content: 'x' } };
  const model: SelectedModel = {
    provider: scriptedModel([{ toolCalls: [write] }, { text: ['done'] }]),
    label: 'scripted',
    baseURL: 'http://127.0.0.1:1',
    close: async () => undefined,
  };
  return { cwd, agents: serveAgents(command.options, model) };
}

const asks = (agent: Agent | undefined) =>
  agent?.tools.filter((t) => t.needsApproval === true).map((t) => t.name) ?? [];

/** The events of a run of `agent` (its model writes a.md); a call that waits for a decision is rejected. */
function writeRun(agent: Agent): Promise<RunEvent[]> {
  const control = new RunControl();
  const events: RunEvent[] = [];
  return new Promise((resolve, reject) => {
    run(agent, 'write a.md', { control }).subscribe({
      next: (event) => {
        events.push(event);
        if (event.type === 'tool_approval_requested') control.reject(event.callId, 'not now');
      },
      error: reject,
      complete: () => resolve(events),
    });
  });
}

describe("serve's agents: the page can ask for more approval, never less", () => {
  it('without --confirm: the plain agent asks nothing, loopctl-ask asks before write_file and run_shell', () => {
    const { agents } = serve(['--allow-shell']);
    expect(agents.main.name).toBe('loopctl');
    expect(asks(agents.main)).toEqual([]);
    expect(agents.asking?.name).toBe(ASKING_AGENT);
    expect(asks(agents.asking)).toEqual(['write_file', 'run_shell']);
    expect(agents.asking?.tools.map((t) => t.name)).toEqual(agents.main.tools.map((t) => t.name));
  });

  it('with --confirm: one agent, and it asks; there is no agent a request could name to write without asking', () => {
    const { agents } = serve(['--confirm', '--allow-shell']);
    expect(agents.main.name).toBe('loopctl');
    expect(asks(agents.main)).toEqual(['write_file', 'run_shell']);
    expect(agents.asking).toBeUndefined();
  });

  it('--read-only: no write_file and no run_shell, nothing would ask, so no asking agent is offered', () => {
    expect(serve(['--read-only']).agents.asking).toBeUndefined();
    expect(asks(serve([]).agents.asking)).toEqual(['write_file']);
  });

  it("a run of loopctl-ask stops at the model's write for a decision; the plain agent's run writes at once", async () => {
    const asking = serve([]);
    const waiting = await writeRun(asking.agents.asking!);
    expect(waiting.map((e) => e.type)).toContain('tool_approval_requested');
    expect(waiting.find((e) => e.type === 'tool_call_failed')).toMatchObject({ outcome: 'rejected' });
    expect(existsSync(path.join(asking.cwd, 'a.md'))).toBe(false);
    const plain = serve([]);
    const wrote = await writeRun(plain.agents.main);
    expect(wrote.map((e) => e.type)).not.toContain('tool_approval_requested');
    expect(wrote.at(-1)?.type).toBe('run_completed');
    expect(existsSync(path.join(plain.cwd, 'a.md'))).toBe(true);
  });
});

describe("the page's setting (AskSetting)", () => {
  const storage = () => {
    const map = new Map<string, string>();
    return {
      getItem: (k: string) => map.get(k) ?? null,
      setItem: (k: string, v: string) => void map.set(k, v),
    } as unknown as Storage;
  };
  const info = { agent: 'loopctl', model: 'm', folder: '/f', tools: [], version: '0' };

  it('offered when the server has an asking agent: off at first, on starts loopctl-ask, kept for the next visit', () => {
    const kept = storage();
    const ask = new AskSetting({ ...info, askingAgent: ASKING_AGENT }, kept);
    expect([ask.offered, ask.locked, ask.on$.value, ask.agent()]).toEqual([true, false, false, 'loopctl']);
    ask.set(true);
    expect([ask.on$.value, ask.agent(), kept.getItem(ASK_KEY)]).toEqual([true, ASKING_AGENT, '1']);
    expect(new AskSetting({ ...info, askingAgent: ASKING_AGENT }, kept).agent()).toBe(ASKING_AGENT);
    ask.set(false);
    expect(ask.agent()).toBe('loopctl');
  });

  it('under serve --confirm: on and locked (turning it off does nothing); without an asking agent: not offered', () => {
    const locked = new AskSetting({ ...info, confirm: true }, storage());
    locked.set(false);
    expect([locked.offered, locked.locked, locked.on$.value, locked.agent()]).toEqual([true, true, true, 'loopctl']);
    const kept = storage();
    kept.setItem(ASK_KEY, '1'); // set under another server: this one (--queue) has no asking agent
    const none = new AskSetting(info, kept);
    none.set(true);
    expect([none.offered, none.on$.value, none.agent()]).toEqual([false, false, 'loopctl']);
  });
});
