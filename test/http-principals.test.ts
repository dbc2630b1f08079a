import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent, localRuns } from '../src/index.js';
import { createHandler } from '../src/http/index.js';
import { collectEvents, gate, scriptedModel } from '../src/testing/index.js';
import { bearer, listen, readStream, request, type Listening } from './support/http.js';

/** Two principals on one server: neither can see, steer or cancel the other's runs, nor read its threads. */

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const input = (text: string) => ({
  threadId: 'shared-name',
  runId: 'x',
  messages: [{ id: `m-${text}`, role: 'user', content: text }],
  tools: [],
  context: [],
});

describe('two principals', () => {
  it("bob gets 404 for every route of alice's run, exactly as for a run that does not exist", async () => {
    const hold = gate();
    const model = scriptedModel([{ text: ['secret'], hold: hold.wait$ }, 'bob answer', 'alice later']);
    const runs = localRuns({ agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model }) } });
    server = await listen(createHandler({ runs, authorize: bearer }));
    const url = server.url;
    const alice = await readStream(`${url}/agents/helper/runs`, {
      principal: 'alice',
      body: input('alice asks'),
      dropAfter: 2,
    });
    const runId = decodeURIComponent(alice.headers.get('loopctl-run-id')!);

    const probes = (id: string): [string, string, unknown][] => [
      ['GET', `/runs/${id}/events?threadId=shared-name`, undefined],
      ['POST', `/runs/${id}/cancel`, { reason: 'bob' }],
      ['POST', `/runs/${id}/stop`, { at: 'turn_end' }],
      ['POST', `/runs/${id}/steering`, { text: 'bob steers' }],
      ['DELETE', `/runs/${id}/steering/anything`, undefined],
      ['POST', `/runs/${id}/tool-calls/c1/decision`, { approve: true }],
    ];
    const unknownPaths = probes('unknown-id').map(([, path]) => path);
    for (const [i, [method, path, body]] of probes(encodeURIComponent(runId)).entries()) {
      const unknownPath = unknownPaths[i]!;
      const foreign = await request(`${url}${path}`, { method, body, principal: 'bob' });
      const unknown = await request(`${url}${unknownPath}`, { method, body, principal: 'bob' });
      expect(foreign, `${method} ${path}`).toEqual({
        status: 404,
        headers: expect.anything(),
        body: { error: { code: 'run_not_found', message: `no run ${JSON.stringify(runId)}` } },
      });
      expect(unknown.body).toEqual({ error: { code: 'run_not_found', message: 'no run "unknown-id"' } });
    }

    // Bob's thread of the same name is his own: his run starts at once and does not see alice's message.
    const bob = await readStream(`${url}/agents/helper/runs`, { principal: 'bob', body: input('bob asks') });
    expect(bob.frames.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(model.requests[1]!.items).toEqual([{ type: 'user', id: 'm-bob asks', text: 'bob asks' }]);

    // Alice's run was not touched by any of it.
    hold.open();
    const events = await collectEvents(runs.events(runId, { principal: 'alice' }));
    expect(events.filter((e) => e.type === 'user_message_injected')).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'secret' });
  });
});
