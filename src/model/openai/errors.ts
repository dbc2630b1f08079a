import { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import { ModelCallError } from '../../errors.js';

/**
 * Classification of OpenAI (and OpenAI-compatible) failures into
 * {@link ModelCallError} ("retry transient errors only": the engine retries
 * what is marked `retryable`; the adapter only classifies, it never waits or
 * retries).
 *
 * Rules, in order:
 * 1. A `ModelCallError` passes through unchanged.
 * 2. HTTP errors (SDK `APIError` with a `status`): an `x-should-retry: true|false`
 *    header decides when present; otherwise 408, 409, 429 and 5xx are retryable,
 *    except two 429 flavours that waiting never fixes: `insufficient_quota`
 *    (code or type) and "Request too large" (`type: 'tokens'` and a message
 *    starting `Request too large`; an ordinary TPM limit has the same type but
 *    says "Rate limit reached", so it stays retryable). `retryAfterMs` comes
 *    from `retry-after-ms`, then `retry-after` (seconds or an HTTP-date).
 * 3. An error object inside a 200 stream (SDK `APIError` without status, or a
 *    Responses `error` / `response.failed` event): `status` stays undefined
 *    and it is retryable only when 5xx-like: a numeric `status_code` / `status`
 *    / `code` ≥ 500, or a `type`/`code` in {@link SERVER_ERROR_CODES}.
 * 4. Connection failures (`APIConnectionError`, `APIConnectionTimeoutError`,
 *    a fetch `TypeError` such as undici's `terminated`, or a cause with a
 *    socket error code such as `ECONNRESET`): retryable, no status; `code` is
 *    the socket error code when one is found (for the SDK's connection error,
 *    any code its cause has, e.g. `DEPTH_ZERO_SELF_SIGNED_CERT`), and its
 *    message names the root cause ("Connection error: bad port").
 * 5. A `SyntaxError` (a `data:` line or body that is not JSON): not retryable,
 *    `code: 'invalid_json'`. Anything else: not retryable.
 *
 * `code` is the provider's code (a number is stringified, e.g. OpenRouter's
 * `429` → `'429'`), falling back to the error `type` (e.g. `server_error`).
 */
export function toModelCallError(err: unknown, context: { streamStarted: boolean }): ModelCallError {
  if (err instanceof ModelCallError) return err;
  const streamStarted = context.streamStarted;
  if (err instanceof APIConnectionError) {
    // The SDK says only "Connection error."; the cause below it says what failed (an errno, TLS, a bad port).
    const root = rootCause(err.cause);
    const code = socketErrorCode(err.cause) ?? anyErrorCode(err.cause);
    const words = root === undefined ? undefined : causeWords(root);
    const message = words === undefined ? err.message : `Connection error: ${words}`;
    return new ModelCallError(message, { retryable: true, streamStarted, cause: err, ...(code ? { code } : {}) });
  }
  if (err instanceof APIUserAbortError) {
    return new ModelCallError(err.message, { retryable: false, code: 'aborted', streamStarted, cause: err });
  }
  if (err instanceof APIError) {
    const payload = asRecord(err.error);
    const code = payloadCode(payload);
    let message = err.message;
    const raw = asRecord(payload?.['metadata'])?.['raw'];
    if (typeof raw === 'string' && raw) message += `: ${raw}`; // OpenRouter puts the upstream reason here
    const init = { code, streamStarted, cause: err };
    if (typeof err.status === 'number') {
      return new ModelCallError(message, {
        ...init,
        status: err.status,
        retryable: httpRetryable(err.status, payload, err.headers),
        retryAfterMs: retryAfterMs(err.headers),
      });
    }
    return new ModelCallError(message, { ...init, retryable: streamErrorRetryable(payload) });
  }
  if (err instanceof SyntaxError) {
    return new ModelCallError(`invalid JSON from the server: ${err.message}`, {
      retryable: false,
      code: 'invalid_json',
      streamStarted,
      cause: err,
    });
  }
  const code = socketErrorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  const retryable = isConnectionFailure(err);
  return new ModelCallError(message, { retryable, streamStarted, cause: err, ...(code ? { code } : {}) });
}

/**
 * Rule 4 of {@link toModelCallError}: the connection failed (the SDK's
 * connection errors, a fetch `TypeError` such as undici's `terminated` when a
 * body is cut, or an error with a socket error code such as `ECONNRESET`), as
 * opposed to an error the server sent.
 */
export function isConnectionFailure(err: unknown): boolean {
  if (err instanceof APIConnectionError) return true;
  if (err instanceof APIError) return false;
  if (socketErrorCode(err) !== undefined) return true;
  return err instanceof TypeError && /terminated|fetch failed|network|socket/i.test(err.message);
}

/** `type`/`code` strings of an in-stream error that mean a transient server fault (rule 3). */
export const SERVER_ERROR_CODES: ReadonlySet<string> = new Set([
  'server_error',
  'internal_error',
  'internal_server_error',
  'service_unavailable',
  'overloaded',
  'overloaded_error',
  'api_error',
]);

function httpRetryable(
  status: number,
  payload: Record<string, unknown> | undefined,
  headers: Headers | undefined,
): boolean {
  const header = headers?.get('x-should-retry');
  if (header === 'true') return true;
  if (header === 'false') return false;
  if (status === 429) {
    if (payload?.['code'] === 'insufficient_quota' || payload?.['type'] === 'insufficient_quota') return false;
    const message = payload?.['message'];
    if (payload?.['type'] === 'tokens' && typeof message === 'string' && /^request too large/i.test(message))
      return false;
    return true;
  }
  return status === 408 || status === 409 || status >= 500;
}

function streamErrorRetryable(payload: Record<string, unknown> | undefined): boolean {
  if (!payload) return false;
  for (const key of ['status_code', 'status', 'code'] as const) {
    const value = payload[key];
    if (typeof value === 'number') return value >= 500;
  }
  return [payload['type'], payload['code']].some((v) => typeof v === 'string' && SERVER_ERROR_CODES.has(v));
}

/**
 * Parses `retry-after-ms` (milliseconds), then `retry-after` (seconds, or an
 * HTTP-date measured against the local clock). @returns ms ≥ 0, or undefined.
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms) {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers?.get('retry-after');
  if (!after) return undefined;
  const seconds = Number(after.trim());
  if (after.trim() !== '' && Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function payloadCode(payload: Record<string, unknown> | undefined): string | undefined {
  const code = payload?.['code'];
  if (typeof code === 'string' && code) return code;
  if (typeof code === 'number') return String(code);
  const type = payload?.['type'];
  return typeof type === 'string' && type ? type : undefined;
}

const SOCKET_CODE = /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/;

function socketErrorCode(err: unknown, depth = 0): string | undefined {
  const record = asRecord(err);
  if (!record || depth > 4) return undefined;
  const code = record['code'];
  if (typeof code === 'string' && SOCKET_CODE.test(code)) return code;
  return socketErrorCode(record['cause'], depth + 1);
}

/** An error code of any shape in the cause chain (TLS ones such as `DEPTH_ZERO_SELF_SIGNED_CERT` included). */
function anyErrorCode(err: unknown, depth = 0): string | undefined {
  const record = asRecord(err);
  if (!record || depth > 4) return undefined;
  const code = record['code'];
  if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
  return anyErrorCode(record['cause'], depth + 1);
}

/** The innermost error of a cause chain (at most 5 deep), or undefined when there is none. */
function rootCause(err: unknown): Record<string, unknown> | undefined {
  let record = asRecord(err);
  for (let depth = 0; record && depth < 5; depth++) {
    const next = asRecord(record['cause']);
    if (!next) break;
    record = next;
  }
  return record;
}

/**
 * The message of a connection failure's root cause, on one line and short: an
 * OpenSSL message keeps only its reason ("wrong version number"); undici's
 * generic "fetch failed" says nothing, so it gives undefined.
 */
function causeWords(root: Record<string, unknown>): string | undefined {
  const message = typeof root['message'] === 'string' ? root['message'].trim() : '';
  if (message === '' || /^fetch failed$/i.test(message)) return undefined;
  const openssl = /:SSL routines:[^:]*:([^:]+):/.exec(message);
  const line = openssl ? openssl[1]! : message.split('\n', 1)[0]!;
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}
