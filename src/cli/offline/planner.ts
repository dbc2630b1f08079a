import { posix } from 'node:path';
import type { Reply } from './chunks.js';
import type { Conversation, Step } from './conversation.js';
import { globFor, parseIntent, type Intent } from './intent.js';
import { summarise } from './summary.js';
import { listingName } from '../../node/walk.js';

/** The first line of every answer of the offline model. */
export const OFFLINE_BANNER = '(offline model)';
/** Most `read_file` calls made to count the lines of one large file. */
const MAX_READS = 100;

const HELP =
  "I am loopctl's built-in offline model: a few rules, no AI. " +
  `I can do these tasks with the real tools, in this folder:
- list files of a kind: "list the .ts files", "what markdown files are there"
- count the lines of a file: "how many lines in package.json"
- find a pattern: "find TODO", "search for 'fetch(' in src"
- summarise a file into a new file: "summarise README.md into SUMMARY.md"
For anything else, point loopctl at a real model: set OPENAI_API_KEY, or pass --base-url http://127.0.0.1:11434/v1 for a local server.`;

const say = (text: string): Reply => ({ kind: 'text', text: `${OFFLINE_BANNER}\n${text}\n` });
const call = (name: string, args: Record<string, unknown>): Reply => ({ kind: 'tool', name, args });

/**
 * Decides the offline model's next move for a conversation: a tool call, or
 * the final answer once the results it needs are in. Pure: all the work is
 * done by the real tools the agent runs.
 */
export function plan(conversation: Conversation): Reply {
  const intent = parseIntent(conversation.task);
  if (intent.kind === 'help') return say(HELP);
  const needed = intent.kind === 'list' ? 'list_dir' : intent.kind === 'find' ? 'search_files' : 'read_file';
  if (!conversation.tools.has(needed)) return say(`I would need the ${needed} tool for this, and it is not offered.`);
  const { steps } = conversation;
  // A summary's looks at its target may fail (a new file): summariseStep reads those results itself.
  const looked = (s: Step, i: number) => intent.kind === 'summarise' && i > 0 && s.name !== 'write_file';
  const failed = steps.find((s, i) => s.isError && !looked(s, i));
  if (failed) return say(failure(failed));
  switch (intent.kind) {
    case 'list':
      return steps.length === 0 ? call('list_dir', listArgs(intent)) : say(listAnswer(intent, steps[0]!.output));
    case 'find':
      return steps.length === 0
        ? call('search_files', { pattern: literal(intent.pattern), path: intent.path })
        : say(findAnswer(intent, steps[0]!.output));
    case 'count':
      return count(intent.path, steps);
    case 'summarise':
      return summariseStep(intent, steps, conversation.tools.has('write_file'));
  }
}

function listArgs(intent: Extract<Intent, { kind: 'list' }>): Record<string, unknown> {
  const pattern = globFor(intent.exts);
  return pattern === undefined ? { path: '.', recursive: true } : { path: '.', recursive: true, pattern };
}

const CAPPED_LIST = /^\[showing (\d+) of (\d+) entries \((\d+) files?, (\d+) folders?\);[^\]]*\]$/;

function listAnswer(intent: Extract<Intent, { kind: 'list' }>, output: string): string {
  const lines = output.split('\n').filter((l) => l !== '' && !l.endsWith('/'));
  const files = lines.filter((l) => !l.startsWith('[') && !l.startsWith('('));
  const notes = lines.filter((l) => l.startsWith('['));
  const capped = notes.map((n) => CAPPED_LIST.exec(n)).find((m) => m !== null);
  const total = capped ? Number(capped[3]) : files.length;
  const kind = intent.label === 'all' ? '' : ` ${intent.label}`;
  if (total === 0) return [`There are no${kind} files in this folder.`, ...notes.map(noteText)].join('\n');
  const head = capped
    ? `I found ${total}${kind} files; ${files.length} of them are listed (narrow the folder or pattern for the rest):`
    : `I found ${total}${kind} file${total === 1 ? '' : 's'}:`;
  return [head, ...files.map((f) => `- ${f}`), ...notes.filter((n) => !CAPPED_LIST.test(n)).map(noteText)].join('\n');
}

/** A tool's bracketed note as a sentence of the answer. */
function noteText(note: string): string {
  const skippedFolders = /^\[skipped folders: (.*)\]$/.exec(note);
  if (skippedFolders) return `Not listed: the folders ${skippedFolders[1]}.`;
  const skipped = /^\[skipped: (.*)\]$/.exec(note);
  if (skipped) return `Not searched: ${skipped[1]}.`;
  return note;
}

/** A regex source matching `text` literally (search_files takes a regex). */
function literal(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

const CAPPED_FIND = /^\[showing (\d+) of (\d+) matching lines;[^\]]*\]$/;

function findAnswer(intent: Extract<Intent, { kind: 'find' }>, output: string): string {
  const where = intent.path === '.' ? '' : ` in ${intent.path}`;
  const byFile = new Map<string, string[]>();
  const notes: string[] = [];
  let capped: RegExpExecArray | null = null;
  for (const line of output.split('\n')) {
    // A file name the tool quoted (a JSON string) is read whole: it may hold a ":N:" of its own.
    const m = /^("(?:[^"\\]|\\.)*"|[^"].*?):(\d+): (.*)$/.exec(line);
    if (!m) {
      capped ??= CAPPED_FIND.exec(line);
      if (line.trim() && line !== 'no matches' && !CAPPED_FIND.test(line)) notes.push(noteText(line));
      continue;
    }
    const list = byFile.get(m[1]!) ?? [];
    list.push(`  ${m[2]}: ${m[3]!.trim()}`);
    byFile.set(m[1]!, list);
  }
  if (byFile.size === 0) return [`No line matches "${intent.pattern}"${where}.`, ...notes].join('\n');
  const shown = [...byFile.values()].reduce((n, l) => n + l.length, 0);
  const files = `${byFile.size} file${byFile.size === 1 ? '' : 's'}`;
  const head = capped
    ? `"${intent.pattern}" appears on ${capped[2]} lines${where}; the first ${shown}, in ${files}, are shown:`
    : `"${intent.pattern}" appears on ${shown} line${shown === 1 ? '' : 's'} in ${files}${where}:`;
  const body = [...byFile].flatMap(([file, lines]) => [file, ...lines]);
  return [head, ...body, ...notes].join('\n');
}

interface ReadResult {
  readonly text: string;
  /** The line to read on from, when the read was cut. */
  readonly next: number | undefined;
  readonly cut: boolean;
  /** The file's line count, when the tool gave it. */
  readonly total: number | undefined;
}

const TRUNCATED =
  /\n?\[truncated at \d+ bytes: showing lines \d+-\d+(?: of (\d+))?(?:; pass startLine=(\d+) to read on)?\]$/;

/** A `read_file` result split into its text and what its truncation note says. */
function readResult(output: string): ReadResult {
  const note = TRUNCATED.exec(output);
  if (!note) return { text: output === '(empty file)' ? '' : output, next: undefined, cut: false, total: undefined };
  const total = note[1] ? Number(note[1]) : undefined;
  return { text: output.slice(0, note.index) + '\n', next: note[2] ? Number(note[2]) : undefined, cut: true, total };
}

function count(path: string, steps: readonly Step[]): Reply {
  if (steps.length === 0) return call('read_file', { path });
  const last = readResult(steps[steps.length - 1]!.output);
  // The tool counted the whole file by streaming it: no need to read it all.
  if (last.total !== undefined) return say(`${path} has ${last.total} line${last.total === 1 ? '' : 's'}.`);
  if (last.next !== undefined && steps.length < MAX_READS) return call('read_file', { path, startLine: last.next });
  let lines = 0;
  for (const step of steps) {
    const { text } = readResult(step.output);
    if (text === '') continue;
    lines += text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  }
  const atLeast = last.cut ? 'at least ' : '';
  const note = last.cut ? ' (it is too large to read to the end)' : '';
  return say(`${path} has ${atLeast}${lines} line${lines === 1 ? '' : 's'}${note}.`);
}

function summariseStep(
  intent: Extract<Intent, { kind: 'summarise' }>,
  steps: readonly Step[],
  canWrite: boolean,
): Reply {
  if (steps.length === 0) return call('read_file', { path: intent.path });
  const source = steps[0]!;
  const read = readResult(source.output);
  const summary = summarise(read.text, intent.path);
  const partly = read.cut ? ` (of its first ${read.text.split('\n').length - 1} lines: the file is large)` : '';
  if (intent.target === undefined) return say(`Here is a summary of ${intent.path}${partly}:\n\n${summary}`);
  const target = intent.target;
  const notWritten = (why: string) =>
    say(`I did not write the summary into ${target}: ${why}. Here is the summary${partly}:\n\n${summary}`);
  if (samePath(target, intent.path)) {
    return notWritten(
      `it is the file being summarised, and writing there would replace it. ` +
        `Name another file (e.g. "summarise ${intent.path} into SUMMARY.md")`,
    );
  }
  if (!canWrite) {
    const readOnly = `I cannot write ${target}: this run is read-only (no write_file tool).`;
    return say(`${readOnly} Here is the summary${partly} instead:\n\n${summary}`);
  }
  // Never overwrite the source silently: another name may be the same file (a symlink, a hard link, an
  // absolute path). So look at the target first (its folder's listing, then the file when it is there); a
  // target holding the source's very text is left alone.
  if (steps.length === 1) return lookAt(target);
  const look = steps[1]!;
  let exists: boolean;
  let targetRead: Step | undefined;
  if (look.name === 'list_dir') {
    if (look.isError && !isMissing(look)) return notWritten(errorText(look));
    const names = look.isError ? [] : look.output.split('\n');
    if (names.includes(`${listingName(posix.basename(target))}/`)) return notWritten('it is a folder');
    exists = names.includes(listingName(posix.basename(target)));
    if (exists && steps.length === 2) return call('read_file', { path: target });
    targetRead = exists ? steps[2] : undefined;
  } else {
    exists = !isMissing(look);
    targetRead = look;
  }
  if (targetRead && !targetRead.isError && targetRead.output === source.output) {
    const why = `it holds the same text as ${intent.path} (it may be that file under another name)`;
    return notWritten(`${why}, and writing there would replace it`);
  }
  if (targetRead?.isError && !isMissing(targetRead)) return notWritten(errorText(targetRead));
  const write = steps.findIndex((s) => s.name === 'write_file');
  if (write < 0) return call('write_file', { path: target, content: summary });
  const points = summary.split('\n').filter((l) => l.startsWith('- ')).length;
  const replaced = exists ? ', replacing what it held' : '';
  const wrote = `I wrote a summary of ${intent.path}${partly} to ${target}${replaced}`;
  return say(`${wrote} (${points} point${points === 1 ? '' : 's'}):\n\n${summary}`);
}

/**
 * The first look at a summary's target: the listing of its folder filtered to its name (a missing file is no
 * error there), or, for a name a glob would read as a pattern, a read of the target itself.
 */
function lookAt(target: string): Reply {
  const name = posix.basename(target.replace(/\\/g, '/'));
  if (/[*?{}[\]]/.test(name)) return call('read_file', { path: target });
  return call('list_dir', { path: posix.dirname(target.replace(/\\/g, '/')), pattern: name });
}

/** A tool error saying the path does not exist. */
function isMissing(step: Step): boolean {
  return step.isError && /: no such file or directory$/.test(step.output);
}

function errorText(step: Step): string {
  return step.output.replace(/^Error:\s*/, '');
}

/** What the answer says of a tool call that failed. */
function failure(step: Step): string {
  return `The ${step.name} tool failed, so I stop here:\n${errorText(step)}`;
}

/** True when two workspace paths name the same file once normalised (`./a.md`, `docs/../a.md`, `a.md`). */
function samePath(a: string, b: string): boolean {
  const norm = (p: string) =>
    posix
      .normalize(p.replace(/\\/g, '/'))
      .replace(/^(\.\/)+/, '')
      .replace(/\/+$/, '');
  return norm(a) === norm(b);
}
