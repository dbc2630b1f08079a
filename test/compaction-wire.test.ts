/**
 * Compacted histories on the wire (docs/long-runs.md, "Compaction"): a long tool loop on a small window, through
 * each real adapter (openaiChat, openaiResponses, anthropicMessages, gemini) against the provider conformance
 * server of its wire (`startWireServer`), which refuses what the real API refuses (a tool call without its result,
 * a result without its call, a lost thought signature…). The run compacts many times and completes; the server
 * refused no request.
 */
import { Observable } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { anthropicMessages } from '../src/anthropic/index.js';
import { gemini } from '../src/model/gemini/index.js';
import {
  COMPACTION_INSTRUCTIONS,
  defineAgent,
  estimateInputTokens,
  familyOf,
  run,
  tool,
  type ModelProvider,
  type ModelRequest,
  type RunEvent,
} from '../src/index.js';
import {
  anthropicWire,
  geminiWire,
  openaiChatKit,
  openaiResponsesKit,
  startWireServer,
  type WireKit,
  type WireServer,
} from '../src/node/testing/index.js';
import { collectEvents } from '../src/testing/index.js';

const TURNS = 60;
const WINDOW = 2_000;

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const readTool = tool({
  name: 'read',
  description: 'reads a file',
  parameters: z.object({ path: z.string() }),
  execute: ({ path }) => `contents of ${path}: ${'lorem ipsum '.repeat(30)}`,
});

/**
 * `provider` with the server's answer to each request queued just before it is sent: a summary for a summary
 * request, else a `read` call each turn until the last, which answers. Usage: the request's estimate.
 */
function scripted(provider: ModelProvider, wire: WireServer): ModelProvider & { turns: number; summaries: number } {
  const out = {
    id: provider.id,
    stream: provider.stream,
    turns: 0,
    summaries: 0,
    call(request: ModelRequest) {
      return new Observable<never>((subscriber) => {
        const usage = { inputTokens: estimateInputTokens(request, familyOf(provider.id)), outputTokens: 10 };
        if (request.instructions === COMPACTION_INSTRUCTIONS) {
          out.summaries++;
          wire.enqueue({
            answer: {
              text: ['Read files f1 to f', String(out.turns), '.'],
              toolCalls: [],
              finishReason: 'stop',
              usage,
            },
          });
        } else if (++out.turns < TURNS) {
          const callId = `call_${out.turns}`;
          const args = [`{"path":`, `"f${out.turns}.ts"}`];
          wire.enqueue({
            answer: {
              text: [],
              toolCalls: [{ callId, name: 'read', argumentChunks: args }],
              finishReason: 'tool_calls',
              usage,
            },
          });
        } else {
          wire.enqueue({ answer: { text: ['All read.'], toolCalls: [], finishReason: 'stop', usage } });
        }
        return (provider.call(request) as Observable<never>).subscribe(subscriber);
      });
    },
  };
  return out;
}

const adapters: [string, WireKit, (origin: string) => ModelProvider][] = [
  ['openaiChat', openaiChatKit().wire, (origin) => openaiChatKit().provider({ origin })],
  ['openaiResponses', openaiResponsesKit().wire, (origin) => openaiResponsesKit().provider({ origin })],
  [
    'anthropicMessages',
    anthropicWire,
    (origin) => anthropicMessages({ model: 'claude-kit', apiKey: 'test-key', baseURL: origin, maxTokens: 1024 }),
  ],
  ['gemini', geminiWire, (origin) => gemini({ model: 'gemini-kit', apiKey: 'test-key', baseURL: origin })],
];

describe(`a ${TURNS}-turn tool loop on a ${WINDOW}-token window, through each adapter and its conformance server`, () => {
  for (const [name, wire, make] of adapters) {
    it(`${name}: completes with compactions; the server refused no request`, async () => {
      server = await startWireServer(wire);
      const model = scripted(make(server.origin), server);
      const agent = defineAgent({
        name: 'reader',
        instructions: 'Read every file you are asked to.',
        model,
        tools: [readTool],
        maxTurns: TURNS + 5,
        contextWindow: WINDOW,
        compaction: {},
      });
      const events: RunEvent[] = await collectEvents(run(agent, 'read the files', { retry: false }));
      const refused = server.requests.filter((r) => r.rejected !== undefined).map((r) => r.rejected);
      expect(refused).toEqual([]);
      expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'All read.' });
      const compactions = events.filter((e) => e.type === 'compaction_completed');
      expect(compactions.length).toBeGreaterThan(3);
      expect(model.summaries).toBe(compactions.length);
      expect(server.requests).toHaveLength(TURNS + model.summaries);
      console.log(
        `${name}: ${TURNS} turns, ${compactions.length} compactions, ${server.requests.length} requests valid`,
      );
    }, 60_000);
  }
});
