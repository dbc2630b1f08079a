/** The tool-name pattern providers accept (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`). */
export const PROVIDER_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX = 64;

/**
 * Makes a provider-valid, unique tool name from `prefix` + `name`: every
 * character outside `[a-zA-Z0-9_-]` becomes `_`, the result is cut to 64
 * characters, and a name already in `taken` gets a `_2`, `_3`, … suffix
 * (the base is shortened so the whole stays within 64). Adds the result to
 * `taken` and returns it.
 *
 * @example
 * providerToolName('fs.read file', 'srv_', new Set()) // 'srv_fs_read_file'
 */
export function providerToolName(name: string, prefix: string, taken: Set<string>): string {
  const clean = (s: string): string => s.replace(/[^a-zA-Z0-9_-]/g, '_');
  const base = (clean(prefix) + clean(name)).slice(0, MAX) || 'tool';
  let candidate = base;
  for (let n = 2; taken.has(candidate); n++) {
    const suffix = `_${n}`;
    candidate = base.slice(0, MAX - suffix.length) + suffix;
  }
  taken.add(candidate);
  return candidate;
}
