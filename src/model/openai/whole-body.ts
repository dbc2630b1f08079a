import { ModelCallError } from '../../errors.js';
import type { ModelResponse } from '../types.js';

/**
 * How a streaming adapter reads a complete JSON answer that a server sent
 * where an event stream was asked for (servers that ignore `stream: true`).
 */
export interface JsonAnswer {
  /** What the body must be, for the error message, e.g. `a chat completion`. */
  readonly expected: string;
  /**
   * @returns the response, or undefined when `body` is not the expected object.
   * @throws the typed errors of the adapter's non-streaming conversion (e.g. an `error` object in the body).
   */
  read(body: unknown): ModelResponse | undefined;
}

/** True when a `content-type` header names `text/event-stream` (parameters and case ignored). */
export function isEventStream(contentType: string): boolean {
  return mediaType(contentType) === 'text/event-stream';
}

/**
 * Reads a successful answer to a streamed request whose `content-type` is not
 * `text/event-stream` (docs/recovery.md, "Wire faults"). A JSON body holding the
 * complete answer (`json.read`) is the response. Anything else fails at once:
 * a non-retryable `ModelCallError` with `code: 'not_event_stream'`, the HTTP
 * status, and a message naming the content type (and, for JSON, what the body
 * is not). The body of a non-JSON answer is never read.
 */
export async function wholeBodyResponse(
  response: Response,
  contentType: string,
  json: JsonAnswer,
): Promise<ModelResponse> {
  const answered = `HTTP ${response.status} with content-type "${contentType}"`;
  const fail = (detail = ''): ModelCallError =>
    new ModelCallError(`the server did not answer with an event stream: ${answered}${detail}`, {
      status: response.status,
      code: 'not_event_stream',
      retryable: false,
    });
  const type = mediaType(contentType);
  if (type !== 'application/json' && !type.endsWith('+json')) throw fail();
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw fail(', and the body is not JSON');
  }
  const answer = json.read(body);
  if (!answer) throw fail(`, and the body is not ${json.expected}`);
  return answer;
}

function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}
