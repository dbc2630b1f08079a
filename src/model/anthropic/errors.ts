import { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { ModelCallError } from '../../errors.js';
import { SERVER_ERROR_CODES, retryAfterMs, toModelCallError } from '../openai/errors.js';

/** In-stream `error` event types that a later attempt can fix (besides {@link SERVER_ERROR_CODES}). */
const RETRYABLE_STREAM_TYPES: ReadonlySet<string> = new Set(['rate_limit_error', 'timeout_error']);

/**
 * Classification of Messages API failures into {@link ModelCallError} (the engine retries what is `retryable`;
 * the adapter never waits or retries). `code` is the body's `error.type` (e.g. `overloaded_error`,
 * `invalid_request_error`).
 *
 * 1. A `ModelCallError` passes through.
 * 2. HTTP errors (SDK `APIError` with a `status`): an `x-should-retry: true|false` header decides when present;
 *    otherwise 408, 409, 429 (`rate_limit_error`), 5xx and 529 (`overloaded_error`) are retryable, every other 4xx
 *    is not. `retryAfterMs` comes from `retry-after-ms`, then `retry-after` (seconds or an HTTP-date).
 * 3. An `error` event inside a 200 stream (SDK `APIError` without status): retryable when its `error.type` is
 *    `overloaded_error`, `api_error` (any of `SERVER_ERROR_CODES`), `rate_limit_error` or `timeout_error`.
 * 4. The SDK's connection errors, a cut body (undici's `terminated`), a socket error code: retryable, as for OpenAI.
 * 5. The SDK's abort: `code: 'aborted'`, not retryable. Anything else: the OpenAI rules (`toModelCallError`).
 */
export function toAnthropicCallError(err: unknown, context: { streamStarted: boolean }): ModelCallError {
  if (err instanceof ModelCallError) return err;
  const { streamStarted } = context;
  if (err instanceof APIUserAbortError) {
    return new ModelCallError(err.message, { retryable: false, code: 'aborted', streamStarted, cause: err });
  }
  if (err instanceof APIConnectionError) {
    const message = causeMessage(err) ?? err.message;
    const code = socketCode(err.cause);
    return new ModelCallError(message, { retryable: true, streamStarted, cause: err, ...(code ? { code } : {}) });
  }
  if (err instanceof APIError) {
    const type = err.type ?? undefined;
    const message = err.apiMessage ? `${type ?? 'error'}: ${err.apiMessage}` : err.message;
    const init = { streamStarted, cause: err, ...(type ? { code: type } : {}) };
    if (typeof err.status === 'number') {
      return new ModelCallError(message, {
        ...init,
        status: err.status,
        retryable: httpRetryable(err.status, err.headers),
        retryAfterMs: retryAfterMs(err.headers),
      });
    }
    const retryable = type !== undefined && (SERVER_ERROR_CODES.has(type) || RETRYABLE_STREAM_TYPES.has(type));
    return new ModelCallError(message, { ...init, retryable });
  }
  return toModelCallError(err, context);
}

function httpRetryable(status: number, headers: Headers | undefined): boolean {
  const header = headers?.get('x-should-retry');
  if (header === 'true') return true;
  if (header === 'false') return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function causeMessage(err: APIConnectionError): string | undefined {
  let cause: unknown = err.cause;
  for (let depth = 0; depth < 5; depth++) {
    const next = (cause as { cause?: unknown } | undefined)?.cause;
    if (typeof next !== 'object' || next === null) break;
    cause = next;
  }
  const message = (cause as { message?: unknown } | undefined)?.message;
  if (typeof message !== 'string' || message === '' || /^fetch failed$/i.test(message)) return undefined;
  return `Connection error: ${message.split('\n', 1)[0]}`;
}

function socketCode(err: unknown, depth = 0): string | undefined {
  if (typeof err !== 'object' || err === null || depth > 4) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code)) return code;
  return socketCode((err as { cause?: unknown }).cause, depth + 1);
}
