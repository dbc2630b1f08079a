import { createHash, randomBytes } from 'node:crypto';

/**
 * How the CLI names its conversations in the session store. A session id is
 * `<folder>#<name>`: the real path of the working folder, then the
 * conversation's name (names never hold `#`, so the last `#` splits them).
 * A folder whose real path is too long for a session id is keyed by its
 * SHA-256 instead (`sha256:<hex>`).
 */

/** The longest conversation name, in UTF-16 units. */
export const MAX_NAME = 100;
/** A real path longer than this (UTF-16 units) is keyed by its hash: a session id holds at most 1 024. */
const MAX_FOLDER = 900;

/** Characters a name may not hold: `#`, control characters and bidi overrides (the terminal-safety set). */
const BAD_NAME_CHARS = /[#\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
/** A lone surrogate: not well-formed Unicode, so not a session id. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `name` cannot name a conversation, or undefined when it can: it must
 * be non-empty, at most {@link MAX_NAME} long, well-formed Unicode, not start
 * or end with a space, and hold no `#` or control character.
 */
export function nameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name.length > MAX_NAME) return `is longer than ${MAX_NAME} characters`;
  if (LONE_SURROGATE.test(name)) return 'is not well-formed Unicode';
  if (name.trim() !== name) return 'starts or ends with a space';
  if (BAD_NAME_CHARS.test(name)) return 'holds "#" or a control character';
  return undefined;
}

/** The key of the folder whose real path is `realFolder` (itself, or its hash when too long). */
export function folderKey(realFolder: string): string {
  if (realFolder.length <= MAX_FOLDER && !LONE_SURROGATE.test(realFolder)) return realFolder;
  return `sha256:${createHash('sha256').update(realFolder).digest('hex')}`;
}

/** The session id of conversation `name` in the folder keyed `folder`. */
export function sessionId(folder: string, name: string): string {
  return `${folder}#${name}`;
}

/** The folder key and name of a session id the CLI made; undefined for another program's id. */
export function splitId(id: string): { readonly folder: string; readonly name: string } | undefined {
  const at = id.lastIndexOf('#');
  if (at <= 0) return undefined;
  const name = id.slice(at + 1);
  return nameProblem(name) === undefined ? { folder: id.slice(0, at), name } : undefined;
}

const two = (n: number): string => String(n).padStart(2, '0');

/**
 * A new conversation's name: the local date and time it started, and four
 * random hex digits so two started in the same second differ
 * (`2025-01-31-142503-9f0c`).
 */
export function newName(now = new Date(), random = randomBytes(2).toString('hex')): string {
  const date = `${now.getFullYear()}-${two(now.getMonth() + 1)}-${two(now.getDate())}`;
  return `${date}-${two(now.getHours())}${two(now.getMinutes())}${two(now.getSeconds())}-${random}`;
}
