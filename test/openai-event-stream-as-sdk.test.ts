/**
 * The OpenAI adapters read a streamed body with their own EventStreamReader (eventsource-parser) instead of the
 * `openai` SDK's `Stream` (docs/recovery.md, "openai's stream reader is not used"), and keep what the SDK's reader
 * did per event. A property against the SDK itself: random event-stream bodies (a BOM or not; `data:` with and
 * without its space, JSON split over several `data` lines, `[DONE]`, malformed JSON, an in-stream `error`, `event:`
 * names, comments, `id:` lines, blank lines; LF, CR and CRLF line ends mixed) cut into random reads (inside code
 * points and between a CR and its LF too) must hand over the same payloads, in the same order, and fail where the
 * SDK fails. The one
 * difference loopctl chose is left out of the bodies: an event with an `event:` name and no `data` is skipped, where
 * the SDK parses its empty data and throws (test/openai-sse-one-read.test.ts pins it).
 */
import fc from 'fast-check';
import { Stream } from 'openai/streaming';
import { afterAll, describe, expect, it } from 'vitest';
import { readEventStream } from '../src/model/openai/event-stream.js';

const encoder = new TextEncoder();

/** One line of a body; an `event:` line comes with a `data` line, so that no event is named and empty. */
type Line = {
  readonly field: 'data' | 'event' | 'comment' | 'id' | 'blank';
  readonly space: boolean;
  readonly value: string;
};

const line: fc.Arbitrary<Line> = fc.oneof(
  fc.record({
    field: fc.constant('data' as const),
    space: fc.boolean(),
    value: fc.oneof(
      { arbitrary: fc.constantFrom('{"n":1}', '{"t":"é€😀"}', '"s"', '[1,2]'), weight: 8 },
      {
        arbitrary: fc.constantFrom('[DONE]', '{"a":', '1}', '{not json', '', '{"error":{"message":"busy"}}'),
        weight: 1,
      },
    ),
  }),
  fc.record({ field: fc.constant('event' as const), space: fc.boolean(), value: fc.constantFrom('x', 'error', '') }),
  fc.record({ field: fc.constant('comment' as const), space: fc.boolean(), value: fc.constantFrom('keep-alive', '') }),
  fc.record({ field: fc.constant('id' as const), space: fc.boolean(), value: fc.constantFrom('7', '') }),
  fc.record({ field: fc.constant('blank' as const), space: fc.constant(false), value: fc.constant('') }),
);

const bodies = fc.record({
  bom: fc.boolean(),
  lines: fc.array(fc.tuple(line, fc.constantFrom('\n', '\r', '\r\n')), { maxLength: 14 }),
  cuts: fc.array(fc.nat(400), { maxLength: 5 }),
});

function textOf(bom: boolean, lines: readonly (readonly [Line, string])[]): string {
  let text = bom ? '\ufeff' : '';
  for (const [{ field, space, value }, end] of lines) {
    const sp = space ? ' ' : '';
    if (field === 'blank') text += end;
    else if (field === 'comment') text += `:${sp}${value}${end}`;
    else if (field === 'event') text += `event:${sp}${value}${end}data: {"named":1}${end}`;
    else text += `${field}:${sp}${value}${end}`;
  }
  return text;
}

/** What the reader hands over when `bytes` arrive in reads cut at `cuts`, then how it ended. */
async function readByLoopctl(bytes: Uint8Array, cuts: readonly number[]): Promise<unknown[]> {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const reads: Uint8Array[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    if (to > from) reads.push(bytes.slice(from, to));
    from = Math.max(from, to);
  }
  let i = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const next = reads[i++];
        if (next === undefined) controller.close();
        else controller.enqueue(next);
      },
    },
    { highWaterMark: 0 },
  );
  const handed: unknown[] = [];
  try {
    await readEventStream<unknown>(body.getReader(), new Headers(), (chunk) => {
      handed.push(chunk);
      return true;
    });
  } catch (err) {
    handed.push(`failed with ${(err as Error).name}`);
  }
  return handed;
}

/** What the SDK's `Stream` yields for the same body, then how it ended. */
async function readBySdk(bytes: Uint8Array): Promise<unknown[]> {
  const response = new Response(new Blob([bytes as Uint8Array<ArrayBuffer>]), {
    headers: { 'content-type': 'text/event-stream' },
  });
  const yielded: unknown[] = [];
  const { error } = console; // the SDK logs the data it cannot parse
  console.error = () => undefined;
  try {
    for await (const chunk of Stream.fromSSEResponse(response, new AbortController())) yielded.push(chunk);
  } catch (err) {
    yielded.push(`failed with ${(err as Error).name}`);
  } finally {
    console.error = error;
  }
  return yielded;
}

let bodiesChecked = 0;
let payloads = 0;
let failures = 0;
afterAll(() =>
  console.info(
    `EventStreamReader against the openai SDK's Stream: ${bodiesChecked} random bodies cut into random reads, ` +
      `${payloads} payloads and ${failures} failures handed over alike`,
  ),
);

describe("the OpenAI event-stream reader against the SDK's own reader", () => {
  it('hands over what the SDK yields, and fails where it fails, for any body cut into any reads', async () => {
    // fast-check's report names the seed and path that replay a failure: FC_SEED=… FC_PATH=… npx vitest run <file>
    const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
    await fc.assert(
      fc.asyncProperty(bodies, async ({ bom, lines, cuts }) => {
        const text = textOf(bom, lines);
        const bytes = encoder.encode(text);
        const [ours, sdk] = await Promise.all([readByLoopctl(bytes, cuts), readBySdk(bytes)]);
        expect({ text, cuts, handed: ours }).toEqual({ text, cuts, handed: sdk });
        bodiesChecked++;
        for (const x of sdk) if (typeof x === 'string') failures++;
        payloads += sdk.length;
      }),
      {
        numRuns: 1_000,
        ...(seed !== undefined ? { seed } : {}),
        ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}),
      },
    );
  });
});
