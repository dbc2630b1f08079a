import { SUMMARY_PREFIX } from '../engine/compaction/apply.js';
import type { Item } from '../items.js';
import type { ModelRequest } from '../model/types.js';
import type { ProviderFamily } from './family.js';
import { tokenCounter } from './tokenizer.js';

/**
 * Characters per token of each family's tokenizer on English prose and code, the fallback estimate loopctl uses
 * where no tokenizer library is loaded (`loadTokenizer`; docs/long-runs.md, "Token accounting"): OpenAI's o200k and
 * cl100k about 4, Anthropic's Claude tokenizer about 3.5, Gemini's SentencePiece about 4. Calibrated per run
 * against the counts each response reports ({@link InputCalibration}).
 */
export const CHARS_PER_TOKEN: Readonly<Record<ProviderFamily, number>> = Object.freeze({
  openai: 4,
  anthropic: 3.5,
  gemini: 4,
  other: 4,
});

/** Tokens a wire message costs beyond its text (role, separators), per family: OpenAI documents 3 for chat. */
const PER_MESSAGE: Readonly<Record<ProviderFamily, number>> = Object.freeze({
  openai: 3,
  anthropic: 3,
  gemini: 2,
  other: 3,
});

/** The parts of a request that are sent as input. */
export type EstimatedRequest = Pick<ModelRequest, 'instructions' | 'items' | 'tools' | 'output'>;

/**
 * An estimate of a request's input tokens for `family`, before any calibration: the texts sent (the
 * instructions, every Item's text, tool names and arguments, call ids and results, the tools' and output schema's
 * JSON) counted by the family's tokenizer when one is loaded ({@link loadTokenizer}: OpenAI's o200k_base from
 * `gpt-tokenizer`), else their characters divided by the family's {@link CHARS_PER_TOKEN}; plus a few tokens per
 * message. Deterministic, no network; rounded up.
 */
export function estimateInputTokens(request: EstimatedRequest, family: ProviderFamily): number {
  const texts: string[] = [request.instructions];
  let messages = request.instructions === '' ? 0 : 1;
  for (const item of request.items) {
    pushItemTexts(texts, item);
    messages++;
  }
  if (request.tools.length > 0) texts.push(JSON.stringify(request.tools));
  if (request.output !== undefined) texts.push(JSON.stringify(request.output.schema));
  const count = tokenCounter(family);
  let tokens = 0;
  if (count === undefined) {
    for (const text of texts) tokens += text.length;
    tokens /= CHARS_PER_TOKEN[family];
  } else {
    for (const text of texts) if (text !== '') tokens += count(text);
  }
  return Math.ceil(tokens + messages * PER_MESSAGE[family]);
}

function pushItemTexts(texts: string[], item: Item): void {
  switch (item.type) {
    case 'user':
      texts.push(item.text);
      return;
    case 'assistant':
      texts.push(item.text);
      for (const c of item.toolCalls) texts.push(c.name, c.arguments, c.callId);
      return;
    case 'tool_result':
      texts.push(item.output, item.callId);
      return;
    case 'summary': // sent as a user message with its prefix (docs/long-runs.md, "Compaction")
      texts.push(SUMMARY_PREFIX + item.text);
      return;
  }
}

/**
 * The per-run calibration of the estimate: the ratio of the input tokens the last response reported to the
 * estimate of the request that got it (kept while responses report counts; 1 before the first). An estimate is
 * the raw one times that ratio.
 */
export class InputCalibration {
  /** The last measured ratio of reported to estimated input tokens; 1 until a response reported counts. */
  ratio = 1;

  /** The calibrated estimate of `raw` (an {@link estimateInputTokens} result). */
  apply(raw: number): number {
    return Math.ceil(raw * this.ratio);
  }

  /** Keeps `reported / raw` as the ratio: a response reported `reported` input tokens for a request estimated `raw`. */
  measure(raw: number, reported: number): void {
    if (raw > 0 && reported > 0 && Number.isFinite(reported)) this.ratio = reported / raw;
  }
}
