/**
 * The offline model's side of a compaction (docs/long-runs.md, "Compaction"): it recognises a summary request by
 * its instructions (`COMPACTION_INSTRUCTIONS`, what the CLI's agents send) and writes an extractive summary of the
 * conversation it was given: the user's requests, the tools used, the last answer. Nothing is invented.
 */
import { COMPACTION_INSTRUCTIONS, COMPACTION_REQUEST } from '../../engine/compaction/policy.js';
import { contentText, isObject } from './conversation.js';

/** Longest quote of one message in a summary, in characters. */
const QUOTE = 200;

type Json = Record<string, unknown>;
const text = contentText;
const quote = (t: string): string => {
  const line = t.replace(/\s+/g, ' ').trim();
  return line.length > QUOTE ? `${line.slice(0, QUOTE - 1)}…` : line;
};

/** True when a Chat Completions body is a compaction's summary request (its system message is the instructions). */
export function isSummaryRequest(body: unknown): boolean {
  if (!isObject(body) || !Array.isArray(body['messages'])) return false;
  const first = (body['messages'] as unknown[])[0];
  return isObject(first) && first['role'] === 'system' && text(first['content']) === COMPACTION_INSTRUCTIONS;
}

/**
 * The summary of a summary request's messages: each user request quoted (an earlier summary's text kept as it is),
 * the tools called with how many times, and the last answer quoted.
 */
export function offlineSummary(body: Json): string {
  const messages = (body['messages'] as unknown[]).filter(isObject);
  const asked: string[] = [];
  const tools = new Map<string, number>();
  let last = '';
  for (const m of messages) {
    const content = text(m['content']);
    if (m['role'] === 'user' && content !== COMPACTION_REQUEST) asked.push(quote(content));
    if (m['role'] === 'assistant') {
      if (content.trim() !== '') last = content;
      for (const c of Array.isArray(m['tool_calls']) ? (m['tool_calls'] as unknown[]) : []) {
        const fn = isObject(c) && isObject(c['function']) ? c['function'] : undefined;
        const name = typeof fn?.['name'] === 'string' ? fn['name'] : 'a tool';
        tools.set(name, (tools.get(name) ?? 0) + 1);
      }
    }
  }
  const used = [...tools].map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(', ');
  return [
    '(offline model) What happened so far:',
    ...asked.map((a) => `- the user: ${a}`),
    used === '' ? '- no tools were used' : `- tools used: ${used}`,
    last === '' ? '- no answer yet' : `- the last answer: ${quote(last)}`,
  ].join('\n');
}
