import type { Reply } from './chunks.js';
import type { Conversation, Step } from './conversation.js';
import { globFor, parseIntent, type Intent } from './intent.js';
import { summarise } from './summary.js';

/** The first line of every answer of the offline model. */
export const OFFLINE_BANNER = '(offline model)';
/** Most `read_file` calls made to count the lines of one large file. */
const MAX_READS = 100;

const HELP = `I am loopctl's built-in offline model: a few rules, no AI. I can do these tasks with the real tools, in this folder:
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
  const failed = steps.find((s) => s.isError);
  if (failed) return say(`The ${failed.name} tool failed, so I stop here:\n${failed.output.replace(/^Error:\s*/, '')}`);
  switch (intent.kind) {
    case 'list':
      return steps.length === 0 ? call('list_dir', listArgs(intent)) : say(listAnswer(intent, steps[0]!.output));
    case 'find':
      return steps.length === 0 ? call('search_files', { pattern: literal(intent.pattern), path: intent.path }) : say(findAnswer(intent, steps[0]!.output));
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

function listAnswer(intent: Extract<Intent, { kind: 'list' }>, output: string): string {
  const lines = output.split('\n').filter((l) => l !== '' && !l.endsWith('/'));
  const files = lines.filter((l) => !l.startsWith('[') && !l.startsWith('('));
  const notes = lines.filter((l) => l.startsWith('['));
  const kind = intent.label === 'all' ? '' : ` ${intent.label}`;
  if (files.length === 0) return `There are no${kind} files in this folder.`;
  const head = `I found ${files.length}${kind} file${files.length === 1 ? '' : 's'}:`;
  return [head, ...files.map((f) => `- ${f}`), ...notes].join('\n');
}

/** A regex source matching `text` literally (search_files takes a regex). */
function literal(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

function findAnswer(intent: Extract<Intent, { kind: 'find' }>, output: string): string {
  const where = intent.path === '.' ? '' : ` in ${intent.path}`;
  if (output.trim() === 'no matches') return `No line matches "${intent.pattern}"${where}.`;
  const byFile = new Map<string, string[]>();
  const notes: string[] = [];
  for (const line of output.split('\n')) {
    const m = /^(.+?):(\d+): (.*)$/.exec(line);
    if (!m) {
      if (line.trim()) notes.push(line);
      continue;
    }
    const list = byFile.get(m[1]!) ?? [];
    list.push(`  ${m[2]}: ${m[3]!.trim()}`);
    byFile.set(m[1]!, list);
  }
  const total = [...byFile.values()].reduce((n, l) => n + l.length, 0);
  const head = `"${intent.pattern}" appears on ${total} line${total === 1 ? '' : 's'} in ${byFile.size} file${byFile.size === 1 ? '' : 's'}${where}:`;
  const body = [...byFile].flatMap(([file, lines]) => [file, ...lines]);
  return [head, ...body, ...notes].join('\n');
}

/** A `read_file` result split into its text and, when it was cut, the line to read on from. */
function readResult(output: string): { text: string; next: number | undefined; cut: boolean } {
  const note = /\n?\[truncated at \d+ bytes: showing lines \d+-\d+(?:; pass startLine=(\d+) to read on)?\]$/.exec(output);
  if (!note) return { text: output === '(empty file)' ? '' : output, next: undefined, cut: false };
  return { text: output.slice(0, note.index) + '\n', next: note[1] ? Number(note[1]) : undefined, cut: true };
}

function count(path: string, steps: readonly Step[]): Reply {
  if (steps.length === 0) return call('read_file', { path });
  const last = readResult(steps[steps.length - 1]!.output);
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

function summariseStep(intent: Extract<Intent, { kind: 'summarise' }>, steps: readonly Step[], canWrite: boolean): Reply {
  if (steps.length === 0) return call('read_file', { path: intent.path });
  const read = readResult(steps[0]!.output);
  const summary = summarise(read.text, intent.path);
  const partly = read.cut ? ` (of its first ${read.text.split('\n').length - 1} lines: the file is large)` : '';
  if (intent.target === undefined) return say(`Here is a summary of ${intent.path}${partly}:\n\n${summary}`);
  if (!canWrite) {
    return say(`I cannot write ${intent.target}: this run is read-only (no write_file tool). Here is the summary${partly} instead:\n\n${summary}`);
  }
  if (steps.length === 1) return call('write_file', { path: intent.target, content: summary });
  const points = summary.split('\n').filter((l) => l.startsWith('- ')).length;
  return say(`I wrote a summary of ${intent.path}${partly} to ${intent.target} (${points} point${points === 1 ? '' : 's'}):\n\n${summary}`);
}
