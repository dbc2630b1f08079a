import type { Item, SessionInfo } from '../../index.js';
import { toJsonLine } from '../json-line.js';
import { argsLine } from '../../wording.js';
import { sanitize, sanitizeLine } from '../sanitize.js';

/** The longest part of a tool call's arguments or a tool's output `sessions show` prints, in characters. */
export const CLIP = 200;

const clip = (text: string): string => (text.length > CLIP ? `${text.slice(0, CLIP - 1)}…` : text);

/**
 * A conversation as `loopctl sessions show` prints it: each task as
 * `> task`, each answer's text, each tool call as `[tool] name args` (`path: a.md`) and its
 * result on the next line (`= output…` or `! error…`, one line, clipped to
 * {@link CLIP} characters with the output's true length). A blank line
 * comes before each task but the first. Every stored text goes through the
 * CLI's sanitiser ("terminal safety"): a conversation holds what models and
 * files said. A compaction's summary (docs/long-runs.md) is printed where it was
 * appended, as `[summary of the earlier conversation] text`, after the Items it covers.
 */
export function transcript(items: readonly Item[]): string {
  const lines: string[] = [];
  for (const item of items) {
    switch (item.type) {
      case 'user':
        if (lines.length > 0) lines.push('');
        lines.push(`> ${sanitize(item.text).replace(/\n/g, '\n  ')}`);
        break;
      case 'assistant':
        if (item.text.trim() !== '') {
          lines.push(`${sanitize(item.text).replace(/\n+$/, '')}${item.interrupted ? ' [interrupted]' : ''}`);
        }
        for (const call of item.toolCalls) {
          // The arguments in words (`path: a.md`), as the live `[tool]` line shows them; none: the name alone.
          const args = clip(sanitizeLine(argsLine(call.arguments, CLIP)));
          lines.push(`[tool] ${sanitizeLine(call.name)}${args === '' ? '' : ` ${args}`}`);
        }
        break;
      case 'summary':
        // The summary a compaction added; the Items it covers are above it, as they were stored.
        lines.push(`[summary of the earlier conversation] ${sanitize(item.text).replace(/\n/g, '\n  ')}`);
        break;
      case 'tool_result': {
        const mark = item.isError ? '!' : '=';
        const size = item.output.length > CLIP ? ` (${item.output.length} characters)` : '';
        lines.push(`  ${mark} ${clip(sanitizeLine(item.output))}${size}${item.interrupted ? ' [interrupted]' : ''}`);
        break;
      }
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** The characters `sessions --json` writes as `\uXXXX`: JSON leaves DEL, C1 controls and bidi overrides raw. */
const RAW_IN_JSON = /[\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `value` as one NDJSON line (the `--json` serialiser) with DEL, C1 controls
 * and bidi overrides escaped as `\uXXXX` too: the same JSON once parsed,
 * and nothing on the line a terminal would act on.
 */
export function safeJsonLine(value: unknown): string {
  return toJsonLine(value).replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const two = (n: number): string => String(n).padStart(2, '0');

/** `ms` since the epoch as local `YYYY-MM-DD HH:MM:SS`. */
export function localTime(ms: number): string {
  const d = new Date(ms);
  const date = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  return `${date} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** One row of `sessions list`: a conversation's name, its folder (shown with `--all`) and what the store says. */
export interface ListedConversation {
  readonly name: string;
  readonly folder: string;
  readonly info: SessionInfo;
}

/**
 * The `sessions list` table: `NAME  ITEMS  UPDATED` (and `FOLDER` with
 * `all`), one conversation a line, newest first, names and folders
 * sanitised onto one line.
 */
export function listTable(rows: readonly ListedConversation[], all: boolean): string {
  const names = rows.map((r) => sanitizeLine(r.name));
  const width = Math.max(4, ...names.map((n) => n.length));
  const head = `${'NAME'.padEnd(width)}  ITEMS  ${all ? 'UPDATED'.padEnd(19) + '  FOLDER' : 'UPDATED'}`;
  const body = rows.map((r, i) => {
    const line = `${names[i]!.padEnd(width)}  ${String(r.info.items).padStart(5)}  ${localTime(r.info.updatedAt)}`;
    return all ? `${line}  ${sanitizeLine(r.folder)}` : line;
  });
  return `${[head, ...body].join('\n')}\n`;
}
