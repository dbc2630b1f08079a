import type { FileHandle } from 'node:fs/promises';

/** Thrown by {@link readTextLines} for a file containing a NUL byte. */
export class BinaryFileError extends Error {
  override readonly name = 'BinaryFileError';
  constructor(readonly path: string) {
    super(`${JSON.stringify(path)} looks like a binary file (it contains a NUL byte); only text files can be read`);
  }
}

/** What {@link readTextLines} read. */
export interface TextSlice {
  /**
   * The selected lines, as in the file (line endings kept), at most `maxBytes` bytes, cut after a whole line when
   * possible.
   */
  readonly text: string;
  /** Number of the first line returned (1-based). */
  readonly firstLine: number;
  /** Number of the last line returned, fully or in part (`firstLine - 1` when none). */
  readonly lastLine: number;
  /** True when `maxBytes` cut the selection short. */
  readonly truncated: boolean;
  /** Lines in the file, known only when the file was read to its end. */
  readonly totalLines: number | undefined;
}

const CHUNK = 64 * 1024;

/**
 * Reads lines `startLine..endLine` (1-based, inclusive) of the open file
 * `handle` from its current position (the start), streaming in 64 KiB chunks
 * so memory stays bounded by `maxBytes` (bytes). Stops at `endLine` or once
 * `maxBytes` are collected. Throws {@link BinaryFileError} when a chunk read
 * contains a NUL byte (the first chunk is always checked), and what `read`
 * throws. Checks `signal` before each chunk; the caller closes the handle.
 */
export async function readTextLines(
  handle: FileHandle,
  opts: { startLine: number; endLine: number; maxBytes: number; signal: AbortSignal; displayPath: string },
): Promise<TextSlice> {
  const { startLine, endLine, maxBytes, signal } = opts;
  const parts: Buffer[] = [];
  let kept = 0;
  let line = 1; // line number at the current read position
  let atEof = false;
  let lastByte = 10;
  const buf = Buffer.alloc(CHUNK);
  while (line <= endLine && kept <= maxBytes) {
    signal.throwIfAborted();
    const { bytesRead } = await handle.read(buf, 0, CHUNK, null);
    if (bytesRead === 0) {
      atEof = true;
      break;
    }
    const chunk = buf.subarray(0, bytesRead);
    if (chunk.includes(0)) throw new BinaryFileError(opts.displayPath);
    lastByte = chunk[bytesRead - 1]!;
    let pos = 0;
    while (pos < bytesRead && line <= endLine) {
      const nl = chunk.indexOf(10, pos);
      const end = nl < 0 ? bytesRead : nl + 1;
      if (line >= startLine) {
        parts.push(Buffer.from(chunk.subarray(pos, end)));
        kept += end - pos;
      }
      if (nl >= 0) line++;
      pos = end;
    }
  }
  let bytes: Buffer = Buffer.concat(parts);
  const truncated = bytes.length > maxBytes;
  if (truncated) bytes = cut(bytes, maxBytes);
  const text = bytes.toString('utf8');
  const newlines = countNewlines(bytes);
  const lastLine = bytes.length === 0 ? startLine - 1 : startLine + newlines - (bytes[bytes.length - 1] === 10 ? 1 : 0);
  const totalLines = atEof ? line - (lastByte === 10 ? 1 : 0) : undefined;
  return { text, firstLine: startLine, lastLine, truncated, totalLines };
}

/**
 * Counts the lines of the open file `handle` by streaming it from its start
 * to its end in 64 KiB chunks, holding one chunk at a time: the newlines,
 * plus one for a last line without one. Checks `signal` before each chunk.
 */
export async function countLines(handle: FileHandle, signal: AbortSignal): Promise<number> {
  const buf = Buffer.alloc(CHUNK);
  let lines = 0;
  let last = 10;
  let at = 0;
  for (;;) {
    signal.throwIfAborted();
    const { bytesRead } = await handle.read(buf, 0, CHUNK, at);
    if (bytesRead === 0) break;
    at += bytesRead;
    lines += countNewlines(buf.subarray(0, bytesRead));
    last = buf[bytesRead - 1]!;
  }
  return lines + (at > 0 && last !== 10 ? 1 : 0);
}

/** Cuts `bytes` to at most `max` bytes: after the last newline if there is one, else at a UTF-8 character boundary. */
function cut(bytes: Buffer, max: number): Buffer {
  const head = bytes.subarray(0, max);
  const nl = head.lastIndexOf(10);
  if (nl >= 0) return head.subarray(0, nl + 1);
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return head.subarray(0, end);
}

function countNewlines(bytes: Buffer): number {
  let n = 0;
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}
