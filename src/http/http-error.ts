import { isLoopctlError } from '../errors.js';
import { readProp } from '../describe.js';

/**
 * An HTTP error answer: `status` and the JSON body `{ error: { code, message, field? } }` (docs/ui.md,
 * "Errors"). `field` names the offending request field (`messages[0].content`, `Last-Event-ID`, `tools`).
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }

  /** The JSON answer: `{ error: { code, message, field? } }`. */
  get body(): { error: { code: string; message: string; field?: string } } {
    const error = {
      code: this.code,
      message: this.message,
      ...(this.field === undefined ? {} : { field: this.field }),
    };
    return { error };
  }
}

/** The status each `Runs` error code answers with; recognised by `code`, so any `Runs` implementation maps. */
const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  run_not_found: 404,
  agent_not_found: 404,
  thread_busy: 409,
  history_conflict: 409,
  run_not_live: 409,
  not_supported: 501,
  not_implemented: 501,
  mailbox_unavailable: 503,
  queue_unavailable: 503,
};

/**
 * Maps anything a `Runs` method rejected with to an {@link HttpError}: its typed code (404, 409, 501), a
 * `ResumeError` to its code (409 for `already_resumed` and `stale_session`, else 400) naming `resume`, a
 * `ConfigurationError` to 400 naming its field (through `field`, which renames a `Runs` field to the
 * request's), anything else to 500 without its details (they stay on the server).
 */
export function toHttpError(error: unknown, field: (name: string) => string = (name) => name): HttpError {
  if (error instanceof HttpError) return error;
  if (!isLoopctlError(error)) return new HttpError(500, 'internal_error', 'the request failed on the server');
  const code = readProp(error, 'code');
  const name = readProp(error, 'field');
  const named = typeof name === 'string' ? field(name) : undefined;
  const message = typeof error.message === 'string' ? error.message : 'error';
  if (typeof code === 'string' && code in STATUS_BY_CODE) {
    return new HttpError(STATUS_BY_CODE[code]!, code, rename(message, name, named), named);
  }
  if (error.name === 'ResumeError' && typeof code === 'string') {
    // `Runs.resume` refused the decisions or the suspension: the run was, or is being, resumed (409), else 400.
    const status = code === 'already_resumed' || code === 'stale_session' ? 409 : 400;
    return new HttpError(status, code, message, field('resume'));
  }
  if (error.name === 'ConfigurationError' && named !== undefined) {
    return new HttpError(400, 'bad_request', rename(message, name, named), named);
  }
  return new HttpError(500, 'internal_error', 'the request failed on the server');
}

/** The message with the `Runs` field name replaced by the request's (`input[2]: …` → `messages[3]: …`). */
function rename(message: string, from: unknown, to: string | undefined): string {
  return typeof from === 'string' && to !== undefined && message.startsWith(`${from}:`)
    ? `${to}:${message.slice(from.length + 1)}`
    : message;
}
