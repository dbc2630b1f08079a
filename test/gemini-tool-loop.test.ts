/**
 * A three-turn Gemini tool loop with thinking, through a SQLite session and a reload (a new store on the same file,
 * a new run with the same session): every thought signature goes back on the wire unchanged, on the part it came
 * with, and the local server (which refuses a dropped, changed or moved signature and an unpaired call, as the real
 * API does) accepts every request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool, type Item } from '../src/index.js';
import { gemini } from '../src/model/gemini/index.js';
import { SqliteSessionStore } from '../src/sqlite/index.js';
import { collectEvents, sequentialIds } from '../src/testing/index.js';
import { geminiText, startGeminiServer, type GeminiServer } from './support/gemini-server.js';

let server: GeminiServer;
let dir: string;
beforeAll(async () => {
  server = await startGeminiServer();
  dir = mkdtempSync(path.join(tmpdir(), 'loopctl-gemini-loop-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const SIG_1 = 'dGhvdWdodC1zaWctdHVybi0xLWNhbGw=';
const SIG_2 = 'dGhvdWdodC1zaWctdHVybi0yLWNhbGw=';
const SIG_3 = 'dGhvdWdodC1zaWctdHVybi0zLXRleHQ=';

function agent() {
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city, in °C',
    parameters: z.object({ city: z.string() }),
    execute: ({ city }) => `${city}: 18 °C, sunny`,
  });
  const convert = tool({
    name: 'convert',
    description: 'Celsius to Fahrenheit',
    parameters: z.object({ celsius: z.number() }),
    execute: ({ celsius }) => String((celsius * 9) / 5 + 32),
  });
  const model = gemini({
    model: 'gemini-2.5-flash',
    apiKey: 'test-key',
    baseURL: server.url,
    config: { thinkingConfig: { includeThoughts: true } },
  });
  return defineAgent({ name: 'weather', instructions: 'Answer in °C and °F.', model, tools: [getWeather, convert] });
}

/** The model turns of a request body, as [kind, signature?] per part. */
const modelTurns = (body: any) =>
  (body.contents as any[])
    .filter((c) => c.role === 'model')
    .map((c) =>
      (c.parts as any[]).map((p) => [
        p.functionCall ? `call ${p.functionCall.name}` : p.thought ? 'thought' : 'text',
        p.thoughtSignature,
      ]),
    );

describe('a three-turn tool loop with thoughts, through a SQLite session and a reload', () => {
  it('replays every signature unchanged, and the server accepts every request', async () => {
    const file = path.join(dir, 'sessions.db');
    const ids = sequentialIds();
    server.enqueue(
      { fixture: 'thought-call-1.sse' },
      { fixture: 'thought-call-2.sse' },
      { fixture: 'thought-answer-3.sse' },
    );
    const n = server.requests.length;

    const store = new SqliteSessionStore(file);
    const first = await collectEvents(
      run(agent(), 'Weather in Paris, in °F too?', { session: store.session('s'), idGenerator: ids }),
    );
    expect(first.at(-1)).toMatchObject({ type: 'run_completed', output: 'It is 18 °C (64.4 °F) in Paris.' });
    const stored = await store.session('s').load();
    await store.close();

    const assistants = stored.filter((i): i is Extract<Item, { type: 'assistant' }> => i.type === 'assistant');
    expect(assistants.map((a) => a.providerParts?.family)).toEqual(['gemini', 'gemini', 'gemini']);
    expect(assistants.map((a) => a.toolCalls.map((c) => c.callId))).toEqual([
      ['gemini-resp-loop-1-0'],
      ['gemini-resp-loop-2-0'],
      [],
    ]);

    // the reload: a new store on the same file, a new run on the same session
    const reopened = new SqliteSessionStore(file);
    server.enqueue(geminiText('Tomorrow: 20 °C (68 °F).'));
    const second = await collectEvents(
      run(agent(), 'And tomorrow?', { session: reopened.session('s'), idGenerator: ids }),
    );
    expect(second.at(-1)).toMatchObject({ type: 'run_completed', output: 'Tomorrow: 20 °C (68 °F).' });
    expect((await reopened.session('s').load()).slice(0, stored.length)).toEqual(stored);
    await reopened.close();

    const requests = server.requests.slice(n);
    expect(requests).toHaveLength(4);
    expect(requests.map((r) => r.rejected)).toEqual([undefined, undefined, undefined, undefined]);
    const turn1 = [
      ['thought', undefined],
      ['call get_weather', SIG_1],
    ];
    const turn2 = [
      ['thought', undefined],
      ['call convert', SIG_2],
    ];
    const turn3 = [
      ['thought', undefined],
      ['text', SIG_3],
    ];
    expect(requests.map((r) => modelTurns(r.body))).toEqual([[], [turn1], [turn1, turn2], [turn1, turn2, turn3]]);

    // the fourth request replays the model turns byte for byte as served, and pairs each call with its response
    const last = requests[3]!.body.contents as any[];
    expect(last.map((c) => c.role)).toEqual(['user', 'model', 'user', 'model', 'user', 'model', 'user']);
    expect(last[1].parts[1]).toEqual({
      functionCall: { name: 'get_weather', args: { city: 'Paris' } },
      thoughtSignature: SIG_1,
    });
    expect(last[2].parts).toEqual([
      { functionResponse: { name: 'get_weather', response: { output: 'Paris: 18 °C, sunny' } } },
    ]);
    expect(last[4].parts).toEqual([{ functionResponse: { name: 'convert', response: { output: '64.4' } } }]);
    expect(last[5].parts[1]).toEqual({ text: 'It is 18 °C (64.4 °F) in Paris.', thoughtSignature: SIG_3 });
  });

  it('parallel calls: one function-response turn with both results, the signed call first', async () => {
    server.enqueue({ fixture: 'parallel-calls.sse' }, geminiText('Paris 18 °C, Tokyo 18 °C.'));
    const n = server.requests.length;
    const events = await collectEvents(run(agent(), 'Paris and Tokyo?'));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed' });
    const second = server.requests[n + 1]!;
    expect(second.rejected).toBeUndefined();
    const contents = second.body.contents as any[];
    expect(contents[1].parts.map((p: any) => [p.functionCall.args.city, p.thoughtSignature])).toEqual([
      ['Paris', 'c2lnLXBhcmFsbGVsLTAx'],
      ['Tokyo', undefined],
    ]);
    expect(contents[2].parts.map((p: any) => p.functionResponse.response.output)).toEqual([
      'Paris: 18 °C, sunny',
      'Tokyo: 18 °C, sunny',
    ]);
  });

  it('calls with Gemini ids: each functionResponse carries its call id', async () => {
    const idsAgent = agent();
    server.enqueue({ fixture: 'parallel-calls-ids.sse' }, geminiText('Done.'));
    const n = server.requests.length;
    await collectEvents(run(idsAgent, 'Paris weather and Tokyo time?'));
    const second = server.requests[n + 1]!;
    expect(second.rejected).toBeUndefined();
    expect(
      (second.body.contents as any[])[2].parts.map((p: any) => [p.functionResponse.id, p.functionResponse.name]),
    ).toEqual([
      ['fc-a1', 'get_weather'],
      ['fc-b2', 'get_time'],
    ]);
  });
});
