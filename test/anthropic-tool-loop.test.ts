/**
 * A three-turn tool loop with extended thinking on the Anthropic adapter: every thinking and redacted thinking block
 * goes back to the API unchanged, with its signature, on every later request, through a SQLite session and a process
 * restart (a second process opens the same file and continues the session: what `loopctl --continue` does). The local
 * server refuses a modified or dropped thinking block and an unpaired tool_use, as the API does, and accepts every
 * request here. Also: `pause_turn` continues the turn, `refusal` ends it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicMessages } from '../src/anthropic/index.js';
import { defineAgent, run, type RunEvent } from '../src/index.js';
import type { AssistantItem } from '../src/items.js';
import { SqliteSessionStore } from '../src/sqlite/index.js';
import { THINKING, thinkingWeatherAgent } from './support/anthropic-thinking-agent.js';
import { readAnthropicFixture, startAnthropicServer, type AnthropicServer } from './support/anthropic-server.js';
import { bundledScript } from './support/bundle-script.js';
import { sseFrames } from './support/openai-server.js';

const execFileAsync = promisify(execFile);
let server: AnthropicServer;
let dir: string;
beforeAll(async () => {
  server = await startAnthropicServer();
  dir = mkdtempSync(path.join(tmpdir(), 'loopctl-anthropic-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const agentOn = thinkingWeatherAgent;
const CONTINUE = fileURLToPath(new URL('./support/anthropic-continue.ts', import.meta.url));

/** A second process continues the session `chat` of `file` with `text` (as `loopctl --continue`); its terminal. */
async function continueInAnotherProcess(baseURL: string, file: string, text: string): Promise<RunEvent> {
  const { stdout } = await execFileAsync(process.execPath, [await bundledScript(CONTINUE), baseURL, file, text]);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as RunEvent;
}

/** The thinking blocks a fixture stream carries, assembled as the API defines them (start + deltas). */
function thinkingOf(fixture: string): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  for (const frame of sseFrames(readAnthropicFixture(fixture))) {
    const event = JSON.parse(/^data: (.*)$/m.exec(frame)![1]!);
    if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block };
    const block = blocks[event.index];
    if (event.type === 'content_block_delta' && event.delta.type === 'thinking_delta') {
      block!['thinking'] = `${block!['thinking'] as string}${event.delta.thinking}`;
    }
    if (event.type === 'content_block_delta' && event.delta.type === 'signature_delta') {
      block!['signature'] = `${block!['signature'] as string}${event.delta.signature}`;
    }
  }
  return blocks.filter((b) => b && (b['type'] === 'thinking' || b['type'] === 'redacted_thinking'));
}
const assistantContent = (body: any) =>
  (body.messages as { role: string; content: { type: string }[] }[])
    .filter((m) => m.role === 'assistant')
    .map((m) => m.content);

describe('three-turn tool loop with thinking, through a SQLite session and a reload', () => {
  it('every signature round-trips unchanged and the server accepts every request', async () => {
    const file = path.join(dir, 'sessions.db');
    const n = server.requests.length;
    server.enqueue({ fixture: 'loop-1.sse' }, { fixture: 'loop-2.sse' }, { fixture: 'loop-3.sse' });
    const first = new SqliteSessionStore(file);
    const events = await lastValueFrom(
      run(agentOn(server.baseURL), 'Weather in Paris and Berlin?', { session: first.session('chat') }).pipe(toArray()),
    );
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      output: 'Paris is sunny and Berlin is cloudy.',
      finishReason: 'stop',
    });
    const results = events.flatMap((e) => (e.type === 'tool_call_completed' ? [e.output] : []));
    expect(results).toEqual(['sunny', 'cloudy']);
    await first.close();

    const [t1, t2, t3] = [thinkingOf('loop-1.sse'), thinkingOf('loop-2.sse'), thinkingOf('loop-3.sse')];
    expect([t1.length, t2.length, t3.length]).toEqual([1, 2, 1]); // loop-2 has a redacted_thinking block too
    const sent = server.requests.slice(n).map((r) => r.body);
    expect(sent).toHaveLength(3);
    // Turn 2 replays turn 1's thinking; turn 3 replays both, each block byte for byte, before its tool_use.
    expect(assistantContent(sent[1])).toEqual([
      [...t1, { type: 'tool_use', id: 'toolu_L1', name: 'lookup', input: { city: 'Paris' } }],
    ]);
    expect(assistantContent(sent[2])[1]).toEqual([
      ...t2,
      { type: 'tool_use', id: 'toolu_L2', name: 'lookup', input: { city: 'Berlin' } },
    ]);

    // The session stored the parts as JSON; a new store on the same file (a new process) reads them back unchanged.
    const second = new SqliteSessionStore(file);
    const stored = (await second.session('chat').load()).filter((i): i is AssistantItem => i.type === 'assistant');
    expect(stored.map((i) => i.providerParts?.family)).toEqual(['anthropic', 'anthropic', 'anthropic']);
    expect(stored.map((i) => (i.providerParts?.data as { content: { type: string }[] }).content.slice(0, -1))).toEqual([
      t1,
      t2,
      t3,
    ]);

    await second.close();

    // `--continue` in another process: a new run with the same session sends the whole history, thinking
    // included, and is accepted.
    server.enqueue({ fixture: 'text.sse' });
    const again = await continueInAnotherProcess(server.baseURL, file, 'And Rome?');
    expect(again).toMatchObject({ type: 'run_completed', output: 'Hello from Claude.' });
    const fourth = server.requests.at(-1)!.body;
    const replayed = assistantContent(fourth).map((content) =>
      content.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking'),
    );
    expect(replayed).toEqual([t1, t2, t3]);
    expect(fourth.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: 'And Rome?' }] });
    expect(fourth.thinking).toEqual(THINKING); // thinking was enabled on the request the server checked
    expect(server.rejections()).toEqual([]);
  });

  it('the server would refuse a modified or dropped thinking block (so the acceptance above means something)', async () => {
    const n = server.requests.length;
    server.enqueue({ fixture: 'loop-1.sse' }, { fixture: 'loop-2.sse' }, { fixture: 'loop-3.sse' });
    await lastValueFrom(run(agentOn(server.baseURL), 'Weather in Paris and Berlin?').pipe(toArray()));
    const valid = server.requests[n + 1]!.body; // user, assistant (thinking, tool_use), user (tool_result)
    const post = (body: unknown) =>
      fetch(`${server.baseURL}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
        body: JSON.stringify(body),
      });
    const before = server.rejections().length;
    const modified = structuredClone(valid);
    modified.messages[1].content[0].thinking += ' (edited)';
    const dropped = structuredClone(valid);
    dropped.messages[1].content.shift();
    const unpaired = structuredClone(valid);
    unpaired.messages.pop();
    const noMaxTokens = structuredClone(valid);
    delete noMaxTokens.max_tokens;
    const sameRole = structuredClone(valid);
    sameRole.messages.push({ role: 'user', content: 'again' });
    const answers = await Promise.all([modified, dropped, unpaired, noMaxTokens, sameRole].map(post));
    expect(answers.map((a) => a.status)).toEqual([400, 400, 400, 400, 400]);
    expect(server.rejections().slice(before)).toEqual([
      'messages.1.content.0: `thinking` or `redacted_thinking` blocks cannot be modified',
      'messages.1: the thinking blocks of the response that called toolu_L1 were dropped',
      'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_L1. Each ' +
        '`tool_use` block must have a corresponding `tool_result` block in the next message.',
      'max_tokens: Field required',
      'messages.3: roles must alternate between "user" and "assistant"',
    ]);
  });
});

describe('finish reasons the engine acts on', () => {
  const plain = () =>
    defineAgent({
      name: 'a',
      instructions: '',
      model: anthropicMessages({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL }),
    });

  it('pause_turn: the paused content goes back unchanged and the next request continues the turn', async () => {
    const n = server.requests.length;
    const refused = server.rejections().length;
    server.enqueue({ fixture: 'pause-turn.sse' }, { fixture: 'pause-turn-resumed.sse' });
    const events = await lastValueFrom(run(plain(), 'Search for loopctl').pipe(toArray()));
    const finishes = events.flatMap((e) => (e.type === 'model_response_completed' ? [e.finishReason] : []));
    expect(finishes).toEqual(['pause_turn', 'stop']);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Found it: loopctl runs agent loops.' });
    const resumed = server.requests[n + 1]!.body;
    expect(resumed.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Search for loopctl' }] },
      {
        role: 'assistant',
        content: [{ type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'loopctl' } }],
      },
    ]);
    expect(server.rejections().slice(refused)).toEqual([]);
  });

  it('pause_turn is bounded by maxTurns: a turn that keeps pausing fails the run max_turns', async () => {
    server.enqueue({ fixture: 'pause-turn.sse' }, { fixture: 'pause-turn.sse' });
    const agent = defineAgent({ ...plainOptions(), maxTurns: 2 });
    const events = await lastValueFrom(run(agent, 'Search').pipe(toArray()));
    expect(events.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'max_turns' });
  });

  it('refusal ends the run like a stop, the refusal on model_response_completed', async () => {
    server.enqueue({ fixture: 'refusal.sse' });
    const events: RunEvent[] = await lastValueFrom(run(plain(), 'Something bad').pipe(toArray()));
    const response = events.find((e) => e.type === 'model_response_completed');
    expect(response).toMatchObject({ finishReason: 'refusal', refusal: 'I can' });
    expect(events.at(-1)).toMatchObject({
      type: 'run_completed',
      stopReason: 'completed',
      finishReason: 'refusal',
      output: 'I can',
    });
  });

  function plainOptions() {
    return {
      name: 'a',
      instructions: '',
      model: anthropicMessages({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL }),
    };
  }
});
