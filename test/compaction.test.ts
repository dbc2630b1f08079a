/**
 * Compaction (docs/long-runs.md, "Compaction"): the summary Item and how a request applies it, where a compaction
 * cuts, the policy's checks, and whole runs through the public API: a threshold compaction stored append-only and
 * applied by the next run (what `--continue` does), truncation, a failed summary, a provider's context-length
 * error, and a 200-turn run on a small window whose every request is valid on four providers' wires.
 */
import { lastValueFrom, of, throwError, toArray, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compactedView } from '../src/engine/compaction/apply.js';
import { cutIndex } from '../src/engine/compaction/cut.js';
import {
  COMPACTION_INSTRUCTIONS,
  CompactionError,
  ConfigurationError,
  MemorySession,
  ModelCallError,
  SUMMARY_PREFIX,
  applySummaries,
  defineAgent,
  estimateInputTokens,
  isCompactionError,
  isContextLengthError,
  run,
  serializeError,
  tool,
  type AgentDefinition,
  type Item,
  type ModelRequest,
  type ModelResponse,
  type RunEvent,
  type SummaryItem,
} from '../src/index.js';
import type { ModelEvent, ModelProvider } from '../src/model/types.js';
import { toAnthropicMessages, toAnthropicTools } from '../src/model/anthropic/history.js';
import { toGeminiContents, toGeminiTools } from '../src/model/gemini/contents.js';
import { toChatMessages, toChatTools } from '../src/model/openai/chat-messages.js';
import { toResponsesInput, toResponsesTools } from '../src/model/openai/responses-items.js';
import { anthropicMessagesFault, kitThinkingLedger } from '../src/node/testing/provider-kits/anthropic-validate.js';
import { geminiContentsFault } from '../src/node/testing/provider-kits/gemini-validate.js';
import { chatRequestFault } from '../src/node/testing/provider-kits/openai-chat-validate.js';
import { responsesRequestFault } from '../src/node/testing/provider-kits/openai-responses-validate.js';

const user = (id: string, text = `question ${id}`): Item => ({ type: 'user', id, text });
const answer = (id: string, text = `answer ${id}`): Item => ({ type: 'assistant', id, text, toolCalls: [] });
const calls = (id: string, ...callIds: string[]): Item => ({
  type: 'assistant',
  id,
  text: '',
  toolCalls: callIds.map((callId) => ({ callId, name: 'read', arguments: '{}' })),
});
const result = (callId: string, output = `output of ${callId}`): Item => ({
  type: 'tool_result',
  callId,
  output,
  isError: false,
});
const summary = (id: string, covers: string[], text = `summary ${id}`): SummaryItem => ({
  type: 'summary',
  id,
  text,
  covers,
});

describe('a summary Item applied to a request', () => {
  it('replaces the prefix it names (tool results with their call) and is sent as a user message', () => {
    const items = [
      user('u1'),
      calls('a1', 'c1'),
      result('c1'),
      answer('a2'),
      user('u2'),
      summary('s1', ['u1', 'a1', 'a2']),
    ];
    expect(applySummaries(items)).toEqual([
      { type: 'user', id: 's1', text: `${SUMMARY_PREFIX}summary s1` },
      user('u2'),
    ]);
  });

  it('a later summary covers the earlier one as the view shows it', () => {
    const items = [
      user('u1'),
      answer('a1'),
      user('u2'),
      summary('s1', ['u1', 'a1']),
      answer('a2'),
      user('u3'),
      summary('s2', ['s1', 'u2', 'a2']),
      answer('a3'),
    ];
    expect(compactedView(items)).toEqual([summary('s2', ['s1', 'u2', 'a2']), user('u3'), answer('a3')]);
  });

  it('a summary whose covers do not name a prefix (out of order, or a gap) is not applied', () => {
    const gap = [user('u1'), answer('a1'), user('u2'), summary('s1', ['u1', 'u2'])];
    const order = [user('u1'), answer('a1'), summary('s1', ['a1', 'u1'])];
    expect(compactedView(gap)).toEqual(gap.slice(0, 3));
    expect(compactedView(order)).toEqual(order.slice(0, 2));
  });

  it('an id used again after the covered prefix is not covered (ids are matched in order, as a prefix)', () => {
    const items = [user('u1'), answer('a1'), user('u1', 'the same id, a later run'), summary('s1', ['u1', 'a1'])];
    expect(applySummaries(items).map((i) => (i.type === 'user' ? i.text : i.type))).toEqual([
      `${SUMMARY_PREFIX}summary s1`,
      'the same id, a later run',
    ]);
  });
});

describe('where a compaction cuts', () => {
  it('keeps the latest turns whole: never between a call and its result, never after a user Item', () => {
    const view = [
      user('u1'),
      calls('a1', 'c1', 'c2'),
      result('c1'),
      result('c2'),
      calls('a2', 'c3'),
      result('c3'),
      answer('a3'),
      user('u2'),
    ];
    expect(cutIndex(view, 1)).toBe(7); // the input not answered yet is the latest turn: only [u2] kept
    expect(cutIndex(view, 2)).toBe(6); // before a3: [a3, u2] kept
    expect(cutIndex(view, 3)).toBe(4); // before a2 (its result kept with it)
    expect(cutIndex(view, 4)).toBeUndefined(); // a1 follows u1: nothing older than four turns can be cut
  });

  it('a user Item stays with the response to it; one summary alone is nothing to cover', () => {
    expect(cutIndex([user('u1'), answer('a1'), user('u2'), answer('a2')], 1)).toBe(2);
    expect(cutIndex([summary('s1', ['x']), user('u2'), answer('a2')], 1)).toBeUndefined();
  });
});

describe('the compaction option', () => {
  const base = { name: 'c', instructions: '', model: { id: 'm', call: () => of() } } as AgentDefinition;
  it.each([
    [{ threshold: 0 }, 'agent.compaction.threshold'],
    [{ threshold: 1.5 }, 'agent.compaction.threshold'],
    [{ keepRecentTurns: 0 }, 'agent.compaction.keepRecentTurns'],
    [{ onFailure: 'ignore' }, 'agent.compaction.onFailure'],
    [{ type: 'truncate', model: {} }, 'agent.compaction.model'],
    [{ type: 'drop' }, 'agent.compaction.type'],
    [{ model: { id: 1 } }, 'agent.compaction.model'],
    [{ instructions: '' }, 'agent.compaction.instructions'],
  ])('%j is refused naming %s', (compaction, field) => {
    let error: unknown;
    try {
      defineAgent({ ...base, compaction } as AgentDefinition);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).field).toBe(field);
  });
});

// ——— whole runs ———

const isSummaryRequest = (r: ModelRequest) => r.instructions === COMPACTION_INSTRUCTIONS;

/**
 * A model for long runs: a summary request gets a summary naming how many Items it read; any other request gets
 * `next(n)` (n counts the agent's requests from 1). Every response reports the request's input tokens as the
 * fallback estimate counts them, so the run's calibration stays 1.
 */
function longRunModel(next: (n: number, request: ModelRequest) => Partial<ModelResponse> | Error, id = 'openai:tiny') {
  const requests: ModelRequest[] = [];
  let n = 0;
  const model: ModelProvider & { requests: ModelRequest[] } = {
    id,
    stream: false,
    requests,
    call(request: ModelRequest): Observable<ModelEvent> {
      requests.push(request);
      const inputTokens = estimateInputTokens(request, 'openai');
      const usage = { inputTokens, outputTokens: 10, totalTokens: inputTokens + 10 };
      if (isSummaryRequest(request)) {
        const text = `The conversation so far: ${request.items.length - 1} messages about reading files.`;
        return of({ type: 'response', response: { text, toolCalls: [], finishReason: 'stop', usage } });
      }
      const step = next(++n, request);
      if (step instanceof Error) return throwError(() => step);
      const response: ModelResponse = { text: '', toolCalls: [], finishReason: 'stop', usage, ...step };
      return of({ type: 'response', response });
    },
  };
  return model;
}

const readTool = tool({
  name: 'read',
  description: 'reads a file',
  parameters: z.object({ path: z.string() }),
  execute: ({ path }) => `contents of ${path}: ${'lorem ipsum '.repeat(30)}`,
});
const readCall = (n: number): Partial<ModelResponse> => ({
  toolCalls: [{ callId: `call_${n}`, name: 'read', arguments: JSON.stringify({ path: `f${n}.ts` }) }],
  finishReason: 'tool_calls',
});
const events$ = (o: Observable<RunEvent>) => lastValueFrom(o.pipe(toArray()));
const ofType = <T extends RunEvent['type']>(events: RunEvent[], type: T) =>
  events.filter((e): e is Extract<RunEvent, { type: T }> => e.type === type);

describe('a run that passes the threshold compacts before its request', () => {
  it('stores the summary with the originals (append-only); the next run sends the summary in their place', async () => {
    const model = longRunModel((n) => (n <= 6 ? readCall(n) : { text: 'all read' }));
    const definition: AgentDefinition = {
      name: 'reader',
      instructions: 'Read files.',
      model,
      tools: [readTool],
      contextWindow: 1_000,
      compaction: { threshold: 0.5 },
    };
    const agent = defineAgent(definition);
    const session = new MemorySession();
    const events = await events$(run(agent, 'read every file', { session }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', stopReason: 'completed', output: 'all read' });
    const started = ofType(events, 'compaction_started');
    const completed = ofType(events, 'compaction_completed');
    expect(started.length).toBeGreaterThan(0);
    expect(completed).toHaveLength(started.length);
    for (const [i, c] of completed.entries()) {
      expect(started[i]).toMatchObject({ cause: 'threshold', strategy: 'summary', contextWindow: 1_000 });
      expect(started[i]!.tokensBefore).toBeGreaterThan(500);
      expect(c.tokensAfter).toBeLessThan(c.tokensBefore);
      expect(c.usage?.inputTokens).toBeGreaterThan(0);
    }
    console.log(`compactions: ${completed.map((c) => `${c.tokensBefore}→${c.tokensAfter}`).join(', ')}`);
    // The summary call's events carry no text of the agent's answer; its usage is in the run's.
    const texts = ofType(events, 'text_delta').map((e) => e.delta);
    expect(texts.join('')).toBe('all read');
    const terminal = events.at(-1) as Extract<RunEvent, { type: 'run_completed' }>;
    const summed = model.requests.reduce((t, r) => t + estimateInputTokens(r, 'openai'), 0);
    expect(terminal.usage.inputTokens).toBe(summed);

    // Stored: every original Item and every summary, in the order they happened.
    const stored = session.items;
    const summaries = stored.filter((i): i is SummaryItem => i.type === 'summary');
    expect(summaries.map((s) => s.id)).toEqual(completed.map((c) => c.summaryId));
    expect(stored.filter((i) => i.type === 'tool_result')).toHaveLength(6); // no result was dropped from the store
    expect(stored[0]).toEqual({ type: 'user', id: expect.any(String), text: 'read every file' });

    // Every agent request after a compaction starts with the summary as a user message, pairs intact.
    for (const request of model.requests.filter((r) => !isSummaryRequest(r))) {
      expect(request.items.some((i) => i.type === 'summary')).toBe(false);
    }
    const last = model.requests.at(-1)!;
    expect(last.items[0]).toMatchObject({ type: 'user', text: expect.stringMatching(`^${SUMMARY_PREFIX}`) });

    // --continue: the next run loads the same history and sends the latest summary in place of what it covers.
    const next = longRunModel(() => ({ text: 'resumed' }));
    const again = defineAgent({ ...definition, model: next });
    const more = await events$(run(again, 'and now?', { session }));
    expect(more.at(-1)).toMatchObject({ type: 'run_completed', output: 'resumed' });
    const sent = next.requests[0]!.items;
    expect(sent[0]).toEqual({
      type: 'user',
      id: summaries.at(-1)!.id,
      text: `${SUMMARY_PREFIX}${summaries.at(-1)!.text}`,
    });
    expect(sent.at(-1)).toMatchObject({ type: 'user', text: 'and now?' });
    expect(sent.length).toBeLessThan(stored.length);
    // The originals stay readable: the store still gives back exactly what was appended.
    expect(session.items.slice(0, stored.length)).toEqual(stored);
  });

  it('a truncation policy leaves the oldest turns out with no model call', async () => {
    const model = longRunModel((n) => (n <= 6 ? readCall(n) : { text: 'done' }));
    const agent = defineAgent({
      name: 'reader',
      instructions: '',
      model,
      tools: [readTool],
      contextWindow: 1_000,
      compaction: { type: 'truncate', threshold: 0.5, keepRecentTurns: 1 },
    });
    const session = new MemorySession();
    const events = await events$(run(agent, 'go', { session }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
    const completed = ofType(events, 'compaction_completed');
    expect(completed.length).toBeGreaterThan(0);
    expect(completed.every((c) => c.strategy === 'truncate' && c.usage === undefined)).toBe(true);
    expect(model.requests.some(isSummaryRequest)).toBe(false);
    const summaries = session.items.filter((i): i is SummaryItem => i.type === 'summary');
    expect(summaries[0]!.text).toMatch(/earlier messages were left out to fit the context window/);
  });

  it('a failed summary fails the run with a CompactionError and leaves the session as it was', async () => {
    const broken: ModelProvider = {
      id: 'openai:summariser',
      call: () => throwError(() => new ModelCallError('bad request', { status: 400 })),
    };
    const history = [user('u1', 'x'.repeat(4000)), answer('a1', 'y'.repeat(4000))];
    const session = new MemorySession(history);
    const model = longRunModel(() => ({ text: 'never' }));
    const definition: AgentDefinition = {
      name: 'c',
      instructions: '',
      model,
      contextWindow: 1_000,
      compaction: { model: broken, keepRecentTurns: 1 },
    };
    const agent = defineAgent(definition);
    const events = await events$(run(agent, 'next', { session }));
    const failed = events.at(-1) as Extract<RunEvent, { type: 'run_failed' }>;
    expect(failed).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
    expect(failed.error).toMatchObject({ name: 'CompactionError', model: 'openai:summariser' });
    expect(ofType(events, 'compaction_completed')).toEqual([]);
    expect(model.requests).toEqual([]); // nothing sent to the agent's model
    expect(session.items).toEqual(history);

    // onFailure: 'truncate' goes on with the oldest turn left out, saying why.
    const lenient = defineAgent({
      ...definition,
      compaction: { model: broken, onFailure: 'truncate', keepRecentTurns: 1 },
    });
    const more = await events$(run(lenient, 'next', { session }));
    expect(more.at(-1)).toMatchObject({ type: 'run_completed', output: 'never' });
    const [completed] = ofType(more, 'compaction_completed');
    expect(completed).toMatchObject({ strategy: 'truncate', error: { name: 'CompactionError' } });
  });

  it('CompactionError names the model and keeps the cause; isCompactionError tells it apart', () => {
    const cause = new ModelCallError('overloaded', { status: 529 });
    const error = new CompactionError('openai:gpt-4o-mini', cause);
    expect(error.message).toBe('compaction failed: openai:gpt-4o-mini gave no summary: overloaded');
    expect(error.cause).toBe(cause);
    expect(new CompactionError('m', undefined).message).toBe(
      'compaction failed: m gave no summary: the summary was empty',
    );
    expect(isCompactionError(error)).toBe(true);
    expect(isCompactionError(cause)).toBe(false);
    expect(serializeError(error)).toMatchObject({ name: 'CompactionError', model: 'openai:gpt-4o-mini' });
  });
});

describe("a provider's context-length error", () => {
  const tooLong = () =>
    new ModelCallError(
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 149767 tokens.",
      { status: 400, code: 'context_length_exceeded' },
    );

  it('is recognised by code or by the words of each provider, never a rate limit', () => {
    expect(isContextLengthError(tooLong())).toBe(true);
    expect(
      isContextLengthError(new ModelCallError('prompt is too long: 210000 tokens > 200000 maximum', { status: 400 })),
    ).toBe(true);
    const gemini = 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).';
    expect(isContextLengthError(new ModelCallError(gemini, { status: 400 }))).toBe(true);
    expect(isContextLengthError(new ModelCallError('too many tokens per minute', { status: 429 }))).toBe(false);
    expect(isContextLengthError(new Error('context length'))).toBe(false);
  });

  it('triggers one compaction and the request once more; a second one fails the run', async () => {
    // No known window: the threshold never triggers, only the provider's refusal does.
    const model = longRunModel(
      (n) => (n === 4 ? tooLong() : n <= 5 ? readCall(n) : { text: 'fits now' }),
      'custom-llm',
    );
    const definition: AgentDefinition = {
      name: 'c',
      instructions: '',
      model,
      tools: [readTool],
      compaction: { keepRecentTurns: 1 },
    };
    const agent = defineAgent(definition);
    const session = new MemorySession();
    const events = await events$(run(agent, 'go', { session }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'fits now' });
    expect(ofType(events, 'compaction_started')).toEqual([
      expect.objectContaining({ cause: 'context_length', strategy: 'summary' }),
    ]);
    expect(ofType(events, 'compaction_started')[0]!.contextWindow).toBeUndefined();
    const retried = model.requests.filter((r) => !isSummaryRequest(r))[4]!; // the 4th request, sent again
    expect(retried.items[0]).toMatchObject({ type: 'user', text: expect.stringMatching(`^${SUMMARY_PREFIX}`) });

    const always = longRunModel((n) => (n <= 3 ? readCall(n) : tooLong()), 'custom-llm');
    const stubborn = defineAgent({ ...definition, model: always });
    const failed = await events$(run(stubborn, 'go'));
    expect(failed.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
    expect(ofType(failed, 'compaction_completed')).toHaveLength(1);

    // Without a policy the error fails the run as before.
    const none = defineAgent({ name: 'c', instructions: '', model: longRunModel(() => tooLong(), 'custom-llm') });
    const plain = await events$(run(none, 'go'));
    expect(plain.at(-1)).toMatchObject({ type: 'run_failed', stopReason: 'model_error' });
    expect(ofType(plain, 'compaction_started')).toEqual([]);
  });
});

/** Why each provider's API would refuse `request` as its adapter would send it (the conformance validators). */
function wireFaults(request: ModelRequest): string[] {
  const { instructions, items, tools } = request;
  const chat = { model: 'gpt-test', messages: toChatMessages(instructions, items), tools: toChatTools(tools) };
  const responses = { model: 'gpt-test', instructions, input: toResponsesInput(items), tools: toResponsesTools(tools) };
  const anthropic = {
    model: 'claude-test',
    max_tokens: 1024,
    ...toAnthropicMessages(instructions, items),
    ...(tools.length > 0 ? { tools: toAnthropicTools(tools) } : {}),
  };
  const gemini = {
    contents: toGeminiContents(items, { unsignedCallSignature: false }),
    ...(tools.length > 0 ? { tools: toGeminiTools(tools) } : {}),
  };
  if (tools.length === 0) delete (chat as Partial<typeof chat>).tools;
  return [
    chatRequestFault(chat),
    responsesRequestFault(responses),
    anthropicMessagesFault(anthropic, kitThinkingLedger),
    geminiContentsFault(gemini),
  ].filter((f): f is string => f !== undefined);
}

describe('a 200-turn run on a small window', () => {
  it('completes with compactions instead of a context-length failure; every request is valid on four wires', async () => {
    const WINDOW = 2_000;
    let overWindow = 0;
    const model = longRunModel((n, request) => {
      if (estimateInputTokens(request, 'openai') > WINDOW) {
        overWindow++;
        return new ModelCallError('maximum context length exceeded', { status: 400, code: 'context_length_exceeded' });
      }
      // Two calls in one turn now and then: pairs of a batch must stay together too.
      if (n % 7 === 0 && n < 200) {
        const two = readCall(n);
        return {
          ...two,
          toolCalls: [...two.toolCalls!, { callId: `call_${n}_b`, name: 'read', arguments: '{"path":"b"}' }],
        };
      }
      return n < 200 ? readCall(n) : { text: 'read all 199 files' };
    });
    const agent = defineAgent({
      name: 'reader',
      instructions: 'Read every file you are asked to.',
      model,
      tools: [readTool],
      maxTurns: 250,
      contextWindow: WINDOW,
      compaction: {},
    });
    const session = new MemorySession();
    const events = await events$(run(agent, 'read 199 files', { session }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'read all 199 files' });
    expect(ofType(events, 'turn_started')).toHaveLength(200);
    const compactions = ofType(events, 'compaction_completed');
    expect(compactions.length).toBeGreaterThan(5);
    expect(overWindow).toBe(0);
    let checked = 0;
    for (const request of model.requests) {
      expect(wireFaults(request), `request ${checked}`).toEqual([]);
      checked++;
    }
    const agentRequests = model.requests.filter((r) => !isSummaryRequest(r));
    expect(agentRequests).toHaveLength(200);
    expect(Math.max(...agentRequests.map((r) => estimateInputTokens(r, 'openai')))).toBeLessThanOrEqual(WINDOW);
    console.log(
      `200 turns, ${compactions.length} compactions, ` +
        `${checked} requests valid on chat, responses, anthropic and gemini`,
    );
    // Every original Item is stored: 200 responses, 199 + 28 tool results.
    expect(session.items.filter((i) => i.type === 'assistant')).toHaveLength(200);
    expect(session.items.filter((i) => i.type === 'summary')).toHaveLength(compactions.length);
  });
});
