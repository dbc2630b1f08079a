import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { geminiContentsFault } from '../../src/node/testing/provider-kits/gemini-validate.js';
import { recordRequest, repoRoot, type RecordedRequest } from './openai-server.js';

/** The hand-built Gemini wire data (`test/fixtures/gemini`, how they were made in its README). */
export const GEMINI_FIXTURES_DIR = path.join(repoRoot, 'test/fixtures/gemini');

/** The signature Google documents for calls Gemini did not write; the server accepts it anywhere. */
const SKIP_SIGNATURE = 'skip_thought_signature_validator';

/** One request the server received (see the OpenAI server's {@link RecordedRequest}), with where it went. */
export interface GeminiRequest extends RecordedRequest {
  /** The `{model}` of the path. */
  readonly model: string;
  /** True for `:streamGenerateContent?alt=sse`, false for `:generateContent`. */
  readonly stream: boolean;
  /** Why the server refused it with 400 (what the real API would refuse), or undefined when it was accepted. */
  readonly rejected: string | undefined;
}

/** What the server answers to one accepted request. */
export type GeminiScript =
  /**
   * A fixture: `.sse` is replayed frame by frame (`delayMs` between frames; `cutAfter` destroys the socket after n
   * frames); `.json` is a whole body, served with `status` or else the body's `error.code` or else 200.
   */
  | { fixture: string; delayMs?: number; cutAfter?: number; status?: number }
  /** Raw SSE frames (each with its `\n\n`); `hold` keeps the stream open and silent after them. */
  | { sse: readonly string[]; delayMs?: number; cutAfter?: number; hold?: boolean }
  /** A JSON body (`generateContent` answer or error), served with `status` (default: `error.code` or 200). */
  | { json: unknown; status?: number; delayMs?: number }
  /** Headers (unless `sendHeaders: false`), then silence until the client closes. */
  | { stall: true; sendHeaders?: boolean }
  | ((req: GeminiRequest) => GeminiScript);

/** A running Gemini-shaped server. */
export interface GeminiServer {
  /** `http://127.0.0.1:<port>`: the `baseURL` of `gemini()` and the SDK's `httpOptions.baseUrl`. */
  readonly url: string;
  readonly requests: GeminiRequest[];
  /** Queues answers for the next accepted requests. */
  enqueue(...answers: GeminiScript[]): void;
  /** Resolves with the n-th request (0-based) once it has arrived. */
  request(n: number): Promise<GeminiRequest>;
  /** The requests refused with 400, with why. */
  rejected(): GeminiRequest[];
  close(): Promise<void>;
}

type Turn = { role: string; parts: Record<string, unknown>[] };

interface Issued {
  readonly kind: 'call' | 'thought' | 'text' | 'other';
  readonly name?: string;
}

/** What one answer the server sent contained: its signatures and its calls (`name` + JSON args, and `id`). */
interface Served {
  readonly signatures: string[];
  readonly calls: { name: string; args: string; id?: string }[];
}

/** Reads a fixture of `test/fixtures/gemini` as text. */
export function readGeminiFixture(name: string): string {
  return readFileSync(path.join(GEMINI_FIXTURES_DIR, name), 'utf8');
}

/** Splits SSE text into frames, each with its blank line (`\r\n\r\n` as Google sends it, or `\n\n`). */
export function geminiFrames(text: string): string[] {
  return text.split(/(?<=\r\n\r\n|(?<!\r)\n\n)/).filter((f) => f.length > 0);
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PATH = /^\/v1beta\/models\/([^/:?]+):(streamGenerateContent|generateContent)(\?.*)?$/;

/** The Gemini error body: `{ error: { code, message, status } }`. */
export const geminiError = (code: number, status: string, message: string) => ({ error: { code, message, status } });

/**
 * Starts a local server on 127.0.0.1 (port 0) speaking Gemini's REST wire format:
 * `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` and `POST /v1beta/models/{model}:generateContent`.
 *
 * Every request is recorded. One the real API would refuse gets its 400 `INVALID_ARGUMENT` (and no scripted answer
 * is used up): `contents` missing or empty, a role other than `user`/`model`, a turn without parts, a model turn with
 * `functionCall`s not followed at once by a user turn with as many `functionResponse`s (same names, and the call's
 * `id` where it had one), a `functionResponse` turn that follows no call turn, a `thoughtSignature` the server never
 * issued (or moved to another kind of part, or another call), and a call of an answer it served that comes back
 * without every signature that answer carried. Other paths get 404 `NOT_FOUND`. Accepted requests are answered in
 * order from `script`, then `enqueue`; with none left, a function `script` answers, else a 500 says so.
 */
export async function startGeminiServer(script?: readonly GeminiScript[] | GeminiScript): Promise<GeminiServer> {
  const queue: GeminiScript[] = Array.isArray(script) ? [...(script as GeminiScript[])] : [];
  const fallback = typeof script === 'function' ? script : undefined;
  const requests: GeminiRequest[] = [];
  const waiters: (() => void)[] = [];
  const issued = new Map<string, Issued>();
  const served: Served[] = [];

  function remember(payload: unknown, answer: Served): void {
    const candidate = (payload as { candidates?: { content?: { parts?: unknown[] } }[] } | null)?.candidates?.[0];
    for (const part of candidate?.content?.parts ?? []) {
      const p = part as Record<string, unknown>;
      const call = p['functionCall'] as { name?: string; args?: unknown; id?: string } | undefined;
      if (call?.name) {
        answer.calls.push({
          name: call.name,
          args: JSON.stringify(call.args ?? {}),
          ...(call.id ? { id: call.id } : {}),
        });
      }
      const sig = p['thoughtSignature'];
      if (typeof sig !== 'string') continue;
      answer.signatures.push(sig);
      const kind = call?.name ? 'call' : typeof p['text'] === 'string' ? (p['thought'] ? 'thought' : 'text') : 'other';
      issued.set(sig, { kind, ...(call?.name ? { name: call.name } : {}) });
    }
  }

  /** The API's rules on contents (shared with the conformance kit), then the signatures this server issued. */
  function validate(body: unknown): string | undefined {
    return geminiContentsFault(body) ?? signatureProblem((body as { contents: Turn[] }).contents);
  }

  function signatureProblem(turns: Turn[]): string | undefined {
    for (let i = 0; i < turns.length; i++) {
      if (turns[i]!.role !== 'model') continue;
      const parts = turns[i]!.parts;
      for (let k = 0; k < parts.length; k++) {
        const sig = parts[k]!['thoughtSignature'];
        if (sig === undefined || sig === SKIP_SIGNATURE) continue;
        const where = `contents[${i}].parts[${k}].thoughtSignature`;
        const known = typeof sig === 'string' ? issued.get(sig) : undefined;
        if (!known) return `${where}: Corrupted thought signature.`;
        const call = parts[k]!['functionCall'] as { name?: string } | undefined;
        const kind = call?.name
          ? 'call'
          : typeof parts[k]!['text'] === 'string'
            ? parts[k]!['thought']
              ? 'thought'
              : 'text'
            : 'other';
        if (kind !== known.kind || (known.name !== undefined && call?.name !== known.name)) {
          return `${where}: the signature was issued on another part`;
        }
      }
      const signatures = new Set(
        parts.flatMap((p) => (typeof p['thoughtSignature'] === 'string' ? [p['thoughtSignature']] : [])),
      );
      const calls = parts.flatMap((p) =>
        p['functionCall'] ? [p['functionCall'] as { name: string; args?: unknown; id?: string }] : [],
      );
      // The answers this turn replays: the same calls, in order (with the id where the answer gave one).
      const same = (a: Served['calls'][number], c: { name: string; args?: unknown; id?: string }) =>
        a.name === c.name && a.args === JSON.stringify(c.args ?? {}) && (a.id === undefined || a.id === c.id);
      const replayed = served.filter(
        (answer) =>
          calls.length > 0 && answer.calls.length === calls.length && answer.calls.every((a, k) => same(a, calls[k]!)),
      );
      if (replayed.length > 0 && !replayed.some((answer) => answer.signatures.every((sig) => signatures.has(sig)))) {
        return `contents[${i}]: Function call is missing a thought_signature in functionCall parts.`;
      }
    }
    return undefined;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const base = await recordRequest(req, res);
    const { body } = base;
    const match = PATH.exec(req.url ?? '');
    const stream = match?.[2] === 'streamGenerateContent';
    let rejected: string | undefined;
    if (!match || req.method !== 'POST') rejected = undefined;
    else if (stream && !/[?&]alt=sse(&|$)/.test(match[3] ?? '')) rejected = 'streamGenerateContent needs alt=sse here';
    else rejected = validate(body);
    const record: GeminiRequest = Object.assign(base, { model: match?.[1] ?? '', stream, rejected });
    requests.push(record);
    waiters.splice(0).forEach((wake) => wake());
    const json = (status: number, payload: unknown) =>
      void res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(payload));
    if (!match || req.method !== 'POST') return json(404, geminiError(404, 'NOT_FOUND', `no route ${req.url}`));
    if (rejected) return json(400, geminiError(400, 'INVALID_ARGUMENT', rejected));
    let answer = queue.shift() ?? fallback;
    while (typeof answer === 'function') answer = answer(record);
    if (!answer) return json(500, geminiError(500, 'INTERNAL', `gemini test server: nothing queued for ${req.url}`));
    await respond(answer, res);
  }

  async function respond(answer: Exclude<GeminiScript, (...args: never[]) => unknown>, res: ServerResponse) {
    if ('stall' in answer) {
      if (answer.sendHeaders !== false) res.writeHead(200, SSE_HEADERS).flushHeaders();
      return;
    }
    const fromFile = 'fixture' in answer && answer.fixture.endsWith('.json');
    if ('json' in answer || fromFile) {
      const payload: unknown =
        'json' in answer ? answer.json : JSON.parse(readGeminiFixture((answer as { fixture: string }).fixture));
      if (answer.delayMs) await sleep(answer.delayMs);
      if (res.destroyed) return;
      const code = (payload as { error?: { code?: unknown } } | null)?.error?.code;
      const status = answer.status ?? (typeof code === 'number' ? code : 200);
      if (status === 200) {
        const record: Served = { signatures: [], calls: [] };
        remember(payload, record);
        served.push(record);
      }
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
      return void res.end(JSON.stringify(payload));
    }
    const frames = 'fixture' in answer ? geminiFrames(readGeminiFixture(answer.fixture)) : [...answer.sse];
    const record: Served = { signatures: [], calls: [] };
    served.push(record);
    res.writeHead('status' in answer && answer.status ? answer.status : 200, SSE_HEADERS);
    res.flushHeaders();
    const cut = answer.cutAfter ?? Infinity;
    let written: Promise<unknown> = Promise.resolve();
    for (let i = 0; i < Math.min(cut, frames.length); i++) {
      if (i > 0 && answer.delayMs) await sleep(answer.delayMs);
      if (res.destroyed) return;
      const data = /^data: (.*)$/m.exec(frames[i]!)?.[1];
      if (data) {
        try {
          remember(JSON.parse(data), record);
        } catch {
          /* a malformed frame on purpose */
        }
      }
      written = new Promise((resolve) => res.write(frames[i]!, resolve));
    }
    if (cut !== Infinity) {
      await written;
      return void res.socket?.destroy();
    }
    if ('hold' in answer && answer.hold) return;
    res.end();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify(geminiError(500, 'INTERNAL', `gemini test server: ${String(err)}`)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...answers) => void queue.push(...answers),
    async request(n) {
      while (requests.length <= n) await new Promise<void>((resolve) => waiters.push(resolve));
      return requests[n]!;
    },
    rejected: () => requests.filter((r) => r.rejected !== undefined),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ── builders for scripted answers ─────────────────────────────────────────────

/** One SSE frame of a streamed `GenerateContentResponse`: `data: <json>\r\n\r\n` as Google sends it. */
export const geminiFrame = (payload: unknown): string => `data: ${JSON.stringify(payload)}\r\n\r\n`;

/** A `GenerateContentResponse` with these parts on candidate 0, an optional finish reason and usage. */
export function geminiChunk(
  parts: readonly Record<string, unknown>[],
  extra: { finishReason?: string; usage?: Record<string, number>; responseId?: string } = {},
) {
  return {
    candidates: [
      {
        content: { parts, role: 'model' },
        ...(extra.finishReason ? { finishReason: extra.finishReason } : {}),
        index: 0,
      },
    ],
    ...(extra.usage ? { usageMetadata: extra.usage } : {}),
    modelVersion: 'gemini-2.5-flash',
    responseId: extra.responseId ?? 'resp-scripted',
  };
}

/** A streamed answer of `text` in one frame, then `STOP` with usage. */
export function geminiText(text: string, responseId = 'resp-text'): GeminiScript {
  const usage = { promptTokenCount: 8, candidatesTokenCount: 4, totalTokenCount: 12 };
  return { sse: [geminiFrame(geminiChunk([{ text }], { finishReason: 'STOP', usage, responseId }))] };
}
