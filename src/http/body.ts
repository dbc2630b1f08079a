import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { HttpError } from './http-error.js';

/**
 * Reads a request body as JSON, at most `maxBytes` bytes: a declared or actual larger body is a 413 (the
 * rest is not read), a body that is not JSON a 400 naming `body`, a non-JSON `Content-Type` a 415. An
 * empty body is `undefined`. A body a framework already parsed (`req.body`, e.g. `express.json()`) is
 * taken as it is.
 */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const parsed = (req as { body?: unknown }).body;
  if (parsed !== undefined && req.readableEnded) return parsed;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      'the body must be JSON (Content-Type: application/json)',
      'Content-Type',
    );
  }
  try {
    return JSON.parse(Buffer.concat(chunks, size).toString('utf8'));
  } catch {
    throw new HttpError(400, 'bad_request', 'the body is not valid JSON', 'body');
  }
}

const tooLarge = (maxBytes: number) =>
  new HttpError(413, 'payload_too_large', `the body is larger than ${maxBytes} bytes`, 'body');

/** Parses `value` with `schema`; a failure is a 400 naming the first offending field (`messages[0].role`). */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, root = 'body'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = fieldName(issue.path, root);
  throw new HttpError(400, 'bad_request', `${field}: ${issue.message}`, field);
}

/** A zod path as a field name: `['messages', 0, 'content']` → `messages[0].content` (the root when empty). */
export function fieldName(path: readonly PropertyKey[], root = 'body'): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  return out === '' ? root : out;
}
