import { runHttpRequest } from '@ag-ui/client';
import type { Message, RunAgentInput } from '@ag-ui/core';
import { EMPTY, Observable, concat, defer, from, map, of, switchMap, throwError } from 'rxjs';
import { sseFrames, type StreamItem } from './sse.js';

/** Where `loopctl serve` mounts loopctl/http (docs/ui.md, "Routes"). */
export const API = '/api';

/** An error answer of the API: `status` and the JSON body's `{ error: { code, message, field? } }`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What `loopctl serve` says about itself (`GET /api/info`). */
export interface ServerInfo {
  readonly agent: string;
  readonly model: string;
  readonly folder: string;
  readonly tools: readonly string[];
  readonly version: string;
  /** `serve --confirm`: write_file and run_shell calls wait for Approve/Reject in the page. */
  readonly confirm?: boolean;
  /** The agent whose write_file and run_shell calls ask first, for the page's setting (absent: not offered). */
  readonly askingAgent?: string;
  /** `serve --queue`: the queue's name (the page asks `GET /api/queue` how it is). */
  readonly queue?: string;
}

/** How `serve --queue`'s queue is (`GET /api/queue`): its workers now, and the command that starts one. */
export interface QueueStatus {
  readonly name: string;
  readonly workers: number;
  readonly start: string;
}

/** A run start: its event stream, or (202) the id of the steering item it became in the thread's live run. */
export type Started =
  | { readonly kind: 'stream'; readonly items: Observable<StreamItem> }
  | { readonly kind: 'steered'; readonly runId: string; readonly steeringId: string };

/**
 * `fetch` as an Observable of its response: unsubscribing before the response came aborts the request. Once it
 * came, whoever reads the body owns it (`runHttpRequest` cancels the body, closing the connection).
 */
function request(path: string, init: RequestInit = {}): Observable<Response> {
  return new Observable<Response>((subscriber) => {
    const abort = new AbortController();
    let answered = false;
    fetch(`${API}${path}`, { ...init, signal: abort.signal, credentials: 'same-origin' }).then(
      (response) => {
        answered = true;
        subscriber.next(response);
        subscriber.complete();
      },
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      if (!answered) abort.abort();
    };
  });
}

/** The body of an error answer as an {@link ApiError}. */
async function apiError(response: Response): Promise<ApiError> {
  let code = 'http_error';
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    code = body.error?.code ?? code;
    message = body.error?.message ?? message;
  } catch {
    /* not JSON: the status line says it */
  }
  return new ApiError(response.status, code, message);
}

/**
 * The frames of an SSE response (`runHttpRequest` reads the body; unsubscribing cancels it). A body that fails
 * mid-stream (the connection cut, the server killed) errors the frames with the body's error, as a read would, but
 * `runHttpRequest` is shown a body that ends: on an error it cancels the body it read, and that cancel, rejected
 * with the same error, was thrown again where nothing catches it (an uncaught "TypeError: network error" in the
 * console for every cut stream).
 */
function frames(response: Response): Observable<StreamItem> {
  return defer(() => {
    let failure: { error: unknown } | undefined;
    const reader = response.body?.getReader();
    const body =
      reader &&
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            failure = { error };
            controller.close();
          }
        },
        cancel: (reason) => reader.cancel(reason).catch(() => undefined),
      });
    const read = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    return concat(
      runHttpRequest(() => Promise.resolve(read)).pipe(sseFrames()),
      defer(() => (failure ? throwError(() => failure!.error) : EMPTY)),
    );
  });
}

/** `POST /agents/:agent/runs` with the conversation as an AG-UI `RunAgentInput`. */
export function startRun(agent: string, threadId: string, messages: Message[]): Observable<Started> {
  const input: RunAgentInput = {
    threadId,
    runId: crypto.randomUUID(), // required by the schema; loopctl gives the run its own id
    messages,
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  };
  const init = {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify(input),
  };
  return request(`/agents/${encodeURIComponent(agent)}/runs`, init).pipe(
    switchMap((response): Observable<Started> => {
      if (!response.ok) return from(apiError(response).then((e) => Promise.reject(e)));
      if (response.status === 202) {
        return from(response.json() as Promise<{ runId: string; steeringId: string }>).pipe(
          map((body) => ({ kind: 'steered', runId: body.runId, steeringId: body.steeringId })),
        );
      }
      return of<Started>({ kind: 'stream', items: frames(response) });
    }),
  );
}

/** `GET /runs/:runId/events` after the frame `lastEventId` (all of them without it). */
export function attachRun(runId: string, threadId: string, lastEventId: string | undefined): Observable<StreamItem> {
  const query = `threadId=${encodeURIComponent(threadId)}`;
  const headers: Record<string, string> = { Accept: 'text/event-stream' };
  if (lastEventId !== undefined) headers['Last-Event-ID'] = lastEventId;
  return request(`/runs/${encodeURIComponent(runId)}/events?${query}`, { headers }).pipe(
    switchMap((response) => (response.ok ? frames(response) : from(apiError(response).then((e) => Promise.reject(e))))),
  );
}

/** A JSON call; resolves with the answer's body, rejects with an {@link ApiError}. */
async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers = { 'Content-Type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`${API}${path}`, init);
  if (!response.ok) throw await apiError(response);
  return (await response.json()) as T;
}

const run = (runId: string) => `/runs/${encodeURIComponent(runId)}`;

/** The calls the page makes besides streams (docs/ui.md, "Routes"). */
export const api = {
  info: () => call<ServerInfo>('GET', '/info'),
  /** `serve --queue` only; a 503 `queue_unavailable` (an {@link ApiError}) while its Redis does not answer. */
  queue: () => call<QueueStatus>('GET', '/queue'),
  /** Resolves once the run's `run_cancelled` was emitted (`cancelled: false`: it had ended otherwise). */
  cancel: (runId: string, reason: string) => call<{ cancelled: boolean }>('POST', `${run(runId)}/cancel`, { reason }),
  /** Stop after this step (run control; 501 until it lands). */
  stop: (runId: string) => call<{ stopped: boolean }>('POST', `${run(runId)}/stop`, { at: 'turn_end' }),
  steer: (runId: string, text: string) => call<{ id: string }>('POST', `${run(runId)}/steering`, { text }),
  withdraw: (runId: string, id: string) =>
    call<{ withdrawn: boolean }>('DELETE', `${run(runId)}/steering/${encodeURIComponent(id)}`),
  /** Approve or reject a tool call awaiting approval (run control; 501 until it lands). */
  decide: (runId: string, callId: string, decision: { approve: true } | { approve: false; reason: string }) =>
    call<{ decided: boolean }>('POST', `${run(runId)}/tool-calls/${encodeURIComponent(callId)}/decision`, decision),
};
