/**
 * Reads a task written in plain English into one of the few task shapes the
 * offline model knows. Pattern matching, not understanding: anything else is
 * `help`.
 */

/** A task shape the offline model can do. */
export type Intent =
  /** List files; `exts` (without dots) filters by extension, `label` names the kind ("all", ".ts", "markdown"). */
  | { readonly kind: 'list'; readonly exts: readonly string[] | undefined; readonly label: string }
  /** Count the lines of the file at `path`. */
  | { readonly kind: 'count'; readonly path: string }
  /** Find the literal `pattern` in the files under `path`. */
  | { readonly kind: 'find'; readonly pattern: string; readonly path: string }
  /** Summarise the file at `path`, into the file `target` when given. */
  | { readonly kind: 'summarise'; readonly path: string; readonly target: string | undefined }
  | { readonly kind: 'help' };

/** Words naming a kind of file, and the extensions they stand for. */
const KINDS: Readonly<Record<string, readonly string[]>> = {
  markdown: ['md', 'markdown'],
  typescript: ['ts', 'tsx', 'mts', 'cts'],
  javascript: ['js', 'jsx', 'mjs', 'cjs'],
  json: ['json'],
  python: ['py'],
  yaml: ['yml', 'yaml'],
  text: ['txt'],
  css: ['css'],
  html: ['html', 'htm'],
  rust: ['rs'],
  go: ['go'],
  shell: ['sh'],
  java: ['java'],
};

const PATH = String.raw`("[^"]+"|'[^']+'|\x60[^\x60]+\x60|\S+)`;
const SUMMARISE = new RegExp(
  String.raw`\bsummar(?:i[sz]e|y of)\s+(?:the\s+)?(?:file\s+)?${PATH}` +
    String.raw`(?:\s+(?:into|to|in|as)\s+(?:a\s+)?(?:new\s+)?(?:file\s+)?${PATH})?`,
  'i',
);
const QUOTED = /"[^"]+"|'[^']+'|\x60[^\x60]+\x60/;
const COUNT = /\b(?:how many lines|count(?:ing)? (?:the )?lines|line count|number of lines|lines? count)\b/i;
const COUNT_PATH = new RegExp(String.raw`\b(?:in|of)\s+(?:the\s+)?(?:file\s+)?${PATH}`, 'i');
const CONTAINING = new RegExp(
  String.raw`\bfiles?\s+(?:that\s+)?(?:contain(?:s|ing)?|with|mentioning)\s+(?:the\s+(?:word|text|string)\s+)?${PATH}`,
  'i',
);
const LIST = /\b(?:list|show|what|which|find|give|are there|any)\b[^?]*\bfiles?\b/i;
const FIND = new RegExp(
  String.raw`\b(?:find|search(?:\s+for)?|grep(?:\s+for)?|look\s+for|where\s+is|locate)\s+` +
    String.raw`(?:all\s+)?(?:the\s+)?(?:occurrences\s+of\s+)?(?:the\s+(?:word|text|string)\s+)?${PATH}`,
  'i',
);
const IN_PATH = new RegExp(String.raw`\s+(?:in|under|inside)\s+(?:the\s+)?(?:folder\s+)?${PATH}\s*$`, 'i');

/** Words that name no particular folder or pattern ("in the files", "find all files"). */
const VAGUE: ReadonlySet<string> = new Set([
  'files',
  'file',
  'folder',
  'project',
  'repo',
  'repository',
  'here',
  'workspace',
  'all',
  'every',
  'code',
  'codebase',
]);

/** Parses `task` into an {@link Intent}. */
export function parseIntent(task: string): Intent {
  const text = task.trim();
  const summarise = SUMMARISE.exec(text);
  if (summarise)
    return { kind: 'summarise', path: clean(summarise[1]!), target: summarise[2] ? clean(summarise[2]) : undefined };
  if (COUNT.test(text)) {
    const path = QUOTED.exec(text)?.[0] ?? fileLike(text) ?? COUNT_PATH.exec(text)?.[1];
    if (path) return { kind: 'count', path: clean(path) };
  }
  const containing = CONTAINING.exec(text);
  if (containing) return find(clean(containing[1]!), text);
  const list = listIntent(text);
  if (list) return list;
  const found = FIND.exec(text);
  if (found) return find(clean(found[1]!), text);
  return { kind: 'help' };
}

function find(pattern: string, text: string): Intent {
  const inPath = IN_PATH.exec(text);
  const where = inPath ? clean(inPath[1]!) : undefined;
  const path = where === undefined || where === pattern || VAGUE.has(where.toLowerCase()) ? '.' : where;
  return { kind: 'find', pattern, path };
}

function listIntent(text: string): Intent | undefined {
  if (!LIST.test(text)) return undefined;
  const dotted = /(?:^|\s)\*?\.([a-z0-9]+)\b/i.exec(text);
  if (dotted) return { kind: 'list', exts: [dotted[1]!.toLowerCase()], label: `.${dotted[1]!.toLowerCase()}` };
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    const exts = KINDS[word] ?? (word === 'md' || word === 'ts' || word === 'js' || word === 'py' ? [word] : undefined);
    if (exts) return { kind: 'list', exts, label: word };
  }
  const found = FIND.exec(text);
  if (found && !VAGUE.has(clean(found[1]!).toLowerCase())) return undefined; // "find TODO in the files"
  return { kind: 'list', exts: undefined, label: 'all' };
}

/** The first word that looks like a file name (`package.json`, `src/a.ts`). */
function fileLike(text: string): string | undefined {
  return text.split(/\s+/).find((w) => /[\w-]\.[\w]|\//.test(clean(w)));
}

/** Drops quotes and trailing punctuation from a word of the task. */
function clean(word: string): string {
  const quoted = /^(["'\x60])(.*)\1$/.exec(word);
  if (quoted) return quoted[2]!;
  return word.replace(/[.,;:!?)]+$/, '').replace(/^\(/, '');
}

/** The glob `list_dir` gets for `exts` (`*.ts`, `*.{md,markdown}`), or undefined for every file. */
export function globFor(exts: readonly string[] | undefined): string | undefined {
  if (!exts || exts.length === 0) return undefined;
  return exts.length === 1 ? `*.${exts[0]}` : `*.{${exts.join(',')}}`;
}
