import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, localRuns, tool, type RunEvent, type Runs } from '../src/index.js';
import { parseEventId } from '../src/ag-ui/index.js';
import { DISCONNECTED_REASON, createHandler, type HandlerOptions } from '../src/http/index.js';
import { collectEvents, gate, scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { checkAgUiStream, normalForm } from './support/ag-ui.js';
import { bearer, listen, parseSse, readStream, type Frame, type Listening } from './support/http.js';

/**
 * Re-attaching to a run's event stream with Last-Event-ID after the connection dropped: no duplicate, no
 * gap, at every event index, while the run is live or after it ended. localRuns replays a run compacted
 * (replay 'compact': the text deltas of one attempt as one event), so the resumed stream is compared in
 * normal form (chunking is not meaning), and a compaction that straddles the resume point is cut there.
 * A slow reader is cut off by the server and resumes the same way.
 */

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const echo = tool({ name: 'echo', description: 'echo', parameters: z.object({}), execute: () => 'echoed' });
const input = (threadId: string) => ({
  threadId,
  runId: 'x',
  messages: [{ id: 'u1', role: 'user', content: 'go' }],
  tools: [],
  context: [],
});

async function serve(steps: ScriptedStep[], options: Partial<HandlerOptions> = {}) {
  const model = scriptedModel(steps);
  const agent = defineAgent({ name: 'helper', instructions: 'i', model, tools: [echo], maxTurns: 10 });
  const local: Runs = localRuns({ agents: { helper: agent } });
  server = await listen(createHandler({ runs: local, authorize: bearer, ...options }));
  return { url: server.url, local };
}

/** A run that streams slowly enough (1 ms between deltas) to be live when the connection drops. */
const SHAPE: ScriptedStep[] = [
  { text: ['Let ', 'me ', 'check.'], deltaDelayMs: 1, toolCalls: [{ name: 'echo', arguments: {}, callId: 'c1' }] },
  { text: ['It ', 'is ', 'done', '.'], deltaDelayMs: 1 },
];

/** Drops the start stream after `n` frames, re-attaches with the last id, and returns both parts. */
async function dropAndResume(url: string, threadId: string, n: number) {
  const first = await readStream(`${url}/agents/helper/runs`, {
    principal: 'alice',
    body: input(threadId),
    dropAfter: n,
  });
  const runId = decodeURIComponent(first.headers.get('loopctl-run-id')!);
  const lastId = first.frames.at(-1)!.id!;
  const rest = await readStream(`${url}/runs/${encodeURIComponent(runId)}/events?threadId=${threadId}`, {
    principal: 'alice',
    lastEventId: lastId,
  });
  expect(rest.status).toBe(200);
  expect(rest.ended).toBe(true);
  const whole = await readStream(`${url}/runs/${encodeURIComponent(runId)}/events?threadId=${threadId}`, {
    principal: 'alice',
  });
  return { first: first.frames, rest: rest.frames, whole: whole.frames };
}

const positions = (frames: readonly Frame[]) => frames.map((f) => parseEventId(f.id!)!);
const before = (a: { seq: number; index?: number }, b: { seq: number; index?: number }) =>
  a.seq < b.seq || (a.seq === b.seq && a.index !== undefined && (b.index === undefined || a.index < b.index));

function expectSeamless(first: Frame[], rest: Frame[], whole: Frame[]) {
  const ids = positions([...first, ...rest]);
  for (let i = 1; i < ids.length; i++) expect(before(ids[i - 1]!, ids[i]!)).toBe(true); // no id twice, in order
  expect(normalForm([...first, ...rest].map((f) => f.event))).toEqual(normalForm(whole.map((f) => f.event)));
}

describe('Last-Event-ID after a dropped connection', () => {
  it('at every event index of a live run (compacted replay)', async () => {
    const { url } = await serve([...SHAPE]);
    // The whole stream once, read live (one frame per delta), to know how many frames there are.
    const probe = await readStream(`${url}/agents/helper/runs`, { principal: 'alice', body: input('probe') });
    await checkAgUiStream(probe.frames.map((f) => f.event));
    const total = probe.frames.length;
    expect(total).toBeGreaterThan(15);
    await server!.close();
    for (let n = 1; n < total; n++) {
      const { url: u } = await serve([...SHAPE]);
      const { first, rest, whole } = await dropAndResume(u, `t${n}`, n);
      expect(first).toHaveLength(n);
      expectSeamless(first, rest, whole);
      // Read after the end, the run's replay is compacted: fewer frames, the same meaning.
      expect(whole.length).toBeLessThan(total);
      await server!.close();
      server = undefined;
    }
  }, 60_000);

  it('property: random runs, a random drop point', async () => {
    const textArb = fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 3 }), {
      minLength: 1,
      maxLength: 4,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ text: textArb, calls: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 3 }),
        fc.nat(),
        async (turns, drop) => {
          const steps: ScriptedStep[] = turns.map(({ text, calls }, i) => ({
            text,
            deltaDelayMs: 1,
            ...(calls > 0 && i < turns.length - 1
              ? { toolCalls: Array.from({ length: calls }, () => ({ name: 'echo', arguments: {} })) }
              : {}),
          }));
          const { url } = await serve(steps);
          const probe = await readStream(`${url}/agents/helper/runs`, { principal: 'alice', body: input('probe') });
          const n = 1 + (drop % (probe.frames.length - 1));
          const { first, rest, whole } = await dropAndResume(url, 'real', n);
          expectSeamless(first, rest, whole);
          await server!.close();
          server = undefined;
        },
      ),
      { numRuns: 25 },
    );
  }, 60_000);
});

describe('disconnect', () => {
  async function heldServer(disconnect: 'continue' | 'cancel') {
    const hold = gate();
    const model = scriptedModel([{ text: ['Working'], hold: hold.wait$ }, 'unused']);
    const runs = localRuns({ agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model }) } });
    server = await listen(createHandler({ runs, authorize: bearer, disconnect }));
    const first = await readStream(`${server.url}/agents/helper/runs`, {
      principal: 'alice',
      body: input('t'),
      dropAfter: 2,
    });
    const runId = decodeURIComponent(first.headers.get('loopctl-run-id')!);
    return { hold, runs, runId };
  }

  it("'cancel': the client going away cancels the live run with DISCONNECTED_REASON", async () => {
    const { runs, runId } = await heldServer('cancel');
    const events = await collectEvents(runs.events(runId, { principal: 'alice' }));
    const last = events.at(-1) as RunEvent & { reason?: unknown };
    expect(last.type).toBe('run_cancelled');
    expect(last.reason).toBe(DISCONNECTED_REASON);
  });

  it("'continue' (the default): the run goes on and completes", async () => {
    const { runs, runId, hold } = await heldServer('continue');
    hold.open();
    const events = await collectEvents(runs.events(runId, { principal: 'alice' }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'Working' });
  });
});

describe('a slow reader', () => {
  it('is cut off past maxBufferedBytes (the run goes on) and resumes with Last-Event-ID, losing nothing', async () => {
    const big = 'x'.repeat(256 * 1024);
    const deltas = Array.from({ length: 96 }, (_, i) => `${i}:${big}`); // 24 MiB: more than any socket buffer
    const { url, local } = await serve([{ text: deltas, deltaDelayMs: 1 }], {
      maxBufferedBytes: 64 * 1024,
      disconnect: 'cancel',
    });
    // A reader that does not read: the response is paused until the server has given up on it.
    const body = JSON.stringify(input('slow'));
    const received = await new Promise<{ text: string; runId: string }>((resolve, reject) => {
      const req = httpRequest(
        `${url}/agents/helper/runs`,
        {
          method: 'POST',
          headers: { authorization: 'Bearer alice', 'content-type': 'application/json' },
        },
        (res) => {
          res.pause();
          const runId = decodeURIComponent(String(res.headers['loopctl-run-id']));
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('error', () => undefined);
          res.on('close', () => resolve({ text, runId }));
          // Let the run finish while nobody reads, then read what the sockets hold.
          void collectEvents(local.events(runId, { principal: 'alice' })).then(() => res.resume(), reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    const frames = parseSse(received.text);
    expect(frames.at(-1)!.event.type).not.toBe('RUN_FINISHED'); // cut off before the end
    const events = await collectEvents(local.events(received.runId, { principal: 'alice' }));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed' }); // a server-side close never cancels
    const rest = await readStream(`${url}/runs/${encodeURIComponent(received.runId)}/events?threadId=slow`, {
      principal: 'alice',
      lastEventId: frames.at(-1)!.id!,
    });
    const all = [...frames, ...rest.frames];
    const text = all.flatMap((f) => (f.event.type === 'TEXT_MESSAGE_CONTENT' ? [f.event.delta] : [])).join('');
    expect(text).toBe(deltas.join(''));
    expect(all.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
  }, 60_000);
});
