/**
 * Helpers for the loopctl/http specs: a server on 127.0.0.1 around a handler, requests as a principal
 * (`Authorization: Bearer <principal>`, what {@link bearer} accepts), and an SSE reader that returns the
 * AG-UI frames with their ids and can drop the connection after n frames.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AGUIEvent } from '@ag-ui/core';

/** The test `authorize`: the bearer token is the principal; none → throws (401). */
export function bearer(req: IncomingMessage): string {
  const header = req.headers.authorization ?? '';
  const m = /^Bearer (.+)$/.exec(header);
  if (!m) throw new Error('no token');
  return m[1]!;
}

export interface Listening {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (a free port) with `listener`, or with a server made elsewhere. */
export async function listen(listener: RequestListener | Server): Promise<Listening> {
  const server = typeof listener === 'function' ? createServer(listener) : listener;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A JSON request as `principal` (none: no Authorization header). */
export async function request(
  url: string,
  init: { method?: string; body?: unknown; principal?: string; headers?: Record<string, string>; raw?: string } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.principal) headers['authorization'] = `Bearer ${init.principal}`;
  let body: string | undefined = init.raw;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: an event stream */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

export interface Frame {
  readonly id: string | undefined;
  readonly event: AGUIEvent;
}

/** Parses SSE text into frames (complete ones only: a cut last frame is left out, as an EventSource does). */
export function parseSse(text: string): Frame[] {
  const blocks = text.split('\n\n');
  blocks.pop(); // after the last "\n\n": empty, or a frame cut short
  return blocks.flatMap((block) => {
    let id: string | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('data: ')) data = line.slice(6);
    }
    return data === undefined ? [] : [{ id, event: JSON.parse(data) as AGUIEvent }];
  });
}

/**
 * Opens an event stream (POST with `body`, or GET) and reads frames until it ends, or until `dropAfter`
 * frames were read, when the connection is dropped by the client. `status` and JSON `error` for a refusal.
 */
export async function readStream(
  url: string,
  init: { body?: unknown; principal: string; lastEventId?: string; dropAfter?: number },
): Promise<{ status: number; frames: Frame[]; ended: boolean; headers: Headers; error?: unknown }> {
  const headers: Record<string, string> = { authorization: `Bearer ${init.principal}`, accept: 'text/event-stream' };
  if (init.lastEventId !== undefined) headers['last-event-id'] = init.lastEventId;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const abort = new AbortController();
  const res = await fetch(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers,
    signal: abort.signal,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return { status: res.status, frames: [], ended: true, headers: res.headers, error: await res.json() };
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch {
      return { status: res.status, frames: parseSse(text), ended: false, headers: res.headers }; // the server cut it
    }
    if (chunk.done) return { status: res.status, frames: parseSse(text), ended: true, headers: res.headers };
    text += decoder.decode(chunk.value, { stream: true });
    if (init.dropAfter !== undefined) {
      const frames = parseSse(text);
      if (frames.length >= init.dropAfter) {
        abort.abort();
        return { status: res.status, frames: frames.slice(0, init.dropAfter), ended: false, headers: res.headers };
      }
    }
  }
}
