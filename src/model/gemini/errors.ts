import { ModelCallError } from '../../errors.js';

/** Gemini `error.status` values (google.rpc.Code names) that mean a transient server fault: retryable. */
export const RETRYABLE_STATUSES: ReadonlySet<string> = new Set([
  'RESOURCE_EXHAUSTED',
  'UNAVAILABLE',
  'INTERNAL',
  'DEADLINE_EXCEEDED',
]);

/** The Gemini error object: `{ error: { code, message, status, details } }` (google.rpc.Status). */
interface GeminiErrorBody {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly status?: unknown;
  readonly details?: unknown;
}

/**
 * Classifies what a Gemini call failed with into a {@link ModelCallError} (the engine retries what is `retryable`;
 * the adapter never waits or retries). Rules, in order:
 *
 * 1. A `ModelCallError` passes unchanged.
 * 2. An API error (`@google/genai`'s `ApiError`: an HTTP status ≥ 400, or an `error` object inside a 200 stream, whose
 *    message holds the JSON body): `status` is the HTTP status (or `error.code`), `code` the `error.status` name
 *    (e.g. `RESOURCE_EXHAUSTED`), the message `"<status> <code>: <error.message>"`. Retryable: 408, 429, 5xx, or an
 *    `error.status` in {@link RETRYABLE_STATUSES}; 400 `INVALID_ARGUMENT`, 403 `PERMISSION_DENIED`, 404 and every
 *    other 4xx are not. `retryAfterMs` comes from the `google.rpc.RetryInfo` entry of `error.details`
 *    (`retryDelay`, e.g. `"37s"` or `"1.5s"`).
 * 3. The SDK's own timer (an abort loopctl did not ask for): retryable, `code: 'timeout'`.
 * 4. A connection failure (a fetch `TypeError` such as undici's `terminated` when a body is cut, or an error with a
 *    socket error code such as `ECONNRESET`): retryable, `code` the socket code when there is one.
 * 5. The SDK's "Incomplete JSON segment at the end" (a stream cut inside an event): retryable,
 *    `code: 'stream_truncated'`. A `SyntaxError` (a `data:` line that is not JSON): not retryable,
 *    `code: 'invalid_json'`. Anything else: not retryable.
 */
export function toGeminiCallError(err: unknown, context: { streamStarted: boolean }): ModelCallError {
  if (err instanceof ModelCallError) return err;
  const streamStarted = context.streamStarted;
  const record = asRecord(err);
  if (err instanceof Error && err.name === 'ApiError' && typeof record?.['status'] === 'number') {
    return apiError(err, record['status'], streamStarted);
  }
  if (err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError')) {
    const message = 'the request timed out (the SDK aborted it)';
    return new ModelCallError(message, { retryable: true, code: 'timeout', streamStarted, cause: err });
  }
  const socket = socketErrorCode(err);
  if (
    socket !== undefined ||
    (err instanceof TypeError && /terminated|fetch failed|network|socket/i.test(err.message))
  ) {
    const message = `Connection error: ${rootMessage(err)}`;
    return new ModelCallError(message, {
      retryable: true,
      streamStarted,
      cause: err,
      ...(socket ? { code: socket } : {}),
    });
  }
  if (err instanceof Error && /^Incomplete JSON segment/.test(err.message)) {
    const message = 'the stream ended inside an event';
    return new ModelCallError(message, { retryable: true, code: 'stream_truncated', streamStarted, cause: err });
  }
  if (err instanceof SyntaxError) {
    const message = `invalid JSON from the server: ${err.message}`;
    return new ModelCallError(message, { retryable: false, code: 'invalid_json', streamStarted, cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ModelCallError(message, { retryable: false, streamStarted, cause: err });
}

function apiError(err: Error, httpStatus: number, streamStarted: boolean): ModelCallError {
  const body = errorBody(err.message);
  const name = typeof body?.status === 'string' && body.status ? body.status : undefined;
  const detail = typeof body?.message === 'string' && body.message ? body.message : err.message.slice(0, 300);
  const retryable =
    httpStatus === 408 ||
    httpStatus === 429 ||
    httpStatus >= 500 ||
    (name !== undefined && RETRYABLE_STATUSES.has(name));
  const retryAfterMs = retryDelayMs(body?.details);
  return new ModelCallError(`${httpStatus}${name ? ` ${name}` : ''}: ${detail}`, {
    status: httpStatus,
    retryable,
    streamStarted,
    cause: err,
    ...(name ? { code: name } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
}

/** The `error` object of an `ApiError` message (the SDK puts the JSON body in it; mid-stream after `got status: …`). */
function errorBody(message: string): GeminiErrorBody | undefined {
  const start = message.indexOf('{');
  if (start < 0) return undefined;
  try {
    const parsed = JSON.parse(message.slice(start)) as { error?: unknown } | unknown[];
    const first = Array.isArray(parsed) ? (parsed[0] as { error?: unknown } | undefined) : parsed;
    const error = asRecord(first)?.['error'];
    return asRecord(error) as GeminiErrorBody | undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `retryDelay` of the `type.googleapis.com/google.rpc.RetryInfo` entry in `error.details`, in ms: a protobuf
 * Duration in JSON (`"37s"`, `"0.5s"`), or `{ seconds, nanos }`. @returns ms ≥ 0, or undefined.
 */
export function retryDelayMs(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const entry of details) {
    const record = asRecord(entry);
    if (typeof record?.['@type'] !== 'string' || !record['@type'].endsWith('google.rpc.RetryInfo')) continue;
    const delay = record['retryDelay'];
    if (typeof delay === 'string') {
      const match = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim());
      if (match) return Math.round(Number(match[1]) * 1000);
    }
    const duration = asRecord(delay);
    if (duration) {
      const seconds = Number(duration['seconds'] ?? 0);
      const nanos = Number(duration['nanos'] ?? 0);
      if (Number.isFinite(seconds) && Number.isFinite(nanos)) return Math.max(0, seconds * 1000 + nanos / 1e6);
    }
  }
  return undefined;
}

const SOCKET_CODE = /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/;

function socketErrorCode(err: unknown, depth = 0): string | undefined {
  const record = asRecord(err);
  if (!record || depth > 4) return undefined;
  const code = record['code'];
  if (typeof code === 'string' && SOCKET_CODE.test(code)) return code;
  return socketErrorCode(record['cause'], depth + 1);
}

/** The message of the innermost error of a cause chain (at most 5 deep). */
function rootMessage(err: unknown): string {
  let record = asRecord(err);
  for (let depth = 0; record && depth < 5; depth++) {
    const next = asRecord(record['cause']);
    if (!next || typeof next['message'] !== 'string' || next['message'] === '') break;
    record = next;
  }
  const message = typeof record?.['message'] === 'string' ? record['message'] : String(err);
  return message.split('\n', 1)[0]!;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}
