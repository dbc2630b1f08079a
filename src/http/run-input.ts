import type { Message, RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { isMintedMessageId } from '../ag-ui/names.js';
import { ConfigurationError } from '../errors.js';
import type { JsonSchema } from '../model/types.js';
import { checkFrontendTools, type FrontendTool, type FrontendToolResult } from '../tools/frontend-tool.js';
import type { Item } from '../items.js';
import type { ToolDecision } from '../runs/types.js';
import { parseWith } from './body.js';
import { HttpError } from './http-error.js';

/** A `RunAgentInput` as `Runs.start` input: the Items, and for each the index of the message it came from. */
export interface MappedInput {
  readonly threadId: string;
  readonly items: Item[];
  /** `messageIndex[i]`: the index in `messages` of `items[i]`, to name the field of an error about it. */
  readonly messageIndex: number[];
  /** With a non-empty `resume`: the decision for each interrupt (by call id), for `Runs.resume`. */
  readonly decisions?: Record<string, ToolDecision | FrontendToolResult>;
  /** `resumeIndex[callId]`: the index in `resume` of the entry answering that call, to name an error's field. */
  readonly resumeIndex?: Record<string, number>;
  /** The client's `tools`, offered to the model as front-end tools (docs/ui.md, "Front-end tools"). */
  readonly frontendTools?: FrontendTool[];
}

const bad = (field: string, message: string) => new HttpError(400, 'bad_request', `${field}: ${message}`, field);

/**
 * Maps an AG-UI `RunAgentInput` to Items (docs/ui.md, "Starting a run"). `threadId` is the session key; the
 * client's `runId` is not used (the run's own id comes in `RUN_STARTED`). Messages whose id loopctl minted
 * (assistant and tool messages the client got from a run's stream) are the server's own record and are left
 * out; the rest become Items with their ids: user messages (text parts only) and assistant messages without
 * tool calls. Activity and reasoning messages are display-only and left out. `tools` are the run's front-end
 * tools (docs/ui.md, "Front-end tools"); a tool message the client made is the result of the front-end
 * tool's call its `resume` entry answers. Refused with a 400 naming the field: a bad `tools` entry, `context`,
 * a non-empty `state`, system and developer messages (the agent has its instructions), tool calls the
 * client made, other tool results, non-text content parts.
 */
export function mapRunInput(body: unknown): MappedInput {
  const input = parseWith(RunAgentInputSchema, body) as RunAgentInput;
  if (input.threadId === '') throw bad('threadId', 'must be a non-empty string');
  const frontendTools = input.tools.map(({ name, description, parameters }) => ({
    name,
    description,
    ...(parameters !== undefined && parameters !== null ? { parameters: parameters as JsonSchema } : {}),
  }));
  try {
    checkFrontendTools(frontendTools, 'tools');
  } catch (error) {
    if (error instanceof ConfigurationError) throw bad(error.field, error.message.slice(error.field.length + 2));
    throw error;
  }
  if (input.context.length > 0) throw bad('context', 'is not supported: put what the agent needs in a message');
  if (!isEmptyState(input.state)) throw bad('state', 'shared state is not supported');
  const items: Item[] = [];
  const messageIndex: number[] = [];
  // A front-end tool's result the client added as a tool message, answered by a resume entry (below).
  const answered = new Set((input.resume ?? []).map((entry) => entry.interruptId));
  const toolResults = new Map<string, string>();
  input.messages.forEach((message, i) => {
    if (message.role === 'tool' && !isMintedMessageId(message.id) && answered.has(message.toolCallId)) {
      toolResults.set(message.toolCallId, textOf(message.content, `messages[${i}].content`));
      return;
    }
    const item = toItem(message, `messages[${i}]`);
    if (item) {
      items.push(item);
      messageIndex.push(i);
    }
  });
  const resume = input.resume !== undefined && input.resume.length > 0 ? input.resume : undefined;
  const decisions = resume ? decisionsOf(resume, toolResults) : undefined;
  const resumeIndex = resume ? Object.fromEntries(resume.map((entry, i) => [entry.interruptId, i])) : undefined;
  return {
    threadId: input.threadId,
    items,
    messageIndex,
    ...(decisions ? { decisions, resumeIndex } : {}),
    ...(frontendTools.length > 0 ? { frontendTools } : {}),
  };
}

/** The default reason of a rejection that gave none, and of an interrupt the client cancelled. */
export const RESUME_REJECTED = 'rejected by the client';
export const RESUME_CANCELLED = 'the client cancelled the interrupt';

/**
 * AG-UI resume entries as decisions by call id (docs/ui.md, "Resuming an interrupt"): `interruptId` is the
 * call id (each interrupt of a suspended run is one pending call); `status: 'resolved'` with `payload`
 * `{ approve: true }` approves it, `{ approve: false, reason? }` rejects it, `{ result }` (no other key) answers
 * a front-end tool's call (a string, or any JSON value as its JSON text; without a payload, the client's tool
 * message for that call); `status: 'cancelled'` rejects it with {@link RESUME_CANCELLED}. A repeated interrupt id or
 * another payload is a 400 naming the entry.
 */
function decisionsOf(
  entries: NonNullable<RunAgentInput['resume']>,
  toolResults: ReadonlyMap<string, string>,
): Record<string, ToolDecision | FrontendToolResult> {
  const out: Record<string, ToolDecision | FrontendToolResult> = {};
  entries.forEach((entry, i) => {
    const field = `resume[${i}]`;
    if (entry.interruptId === '') throw bad(`${field}.interruptId`, 'must be a non-empty string');
    if (Object.hasOwn(out, entry.interruptId)) throw bad(`${field}.interruptId`, 'answers an interrupt twice');
    if (entry.status === 'cancelled') {
      out[entry.interruptId] = { approve: false, reason: RESUME_CANCELLED };
      return;
    }
    const payload: unknown = entry.payload;
    const fromMessage = toolResults.get(entry.interruptId);
    if (fromMessage !== undefined && (payload === undefined || payload === null)) {
      out[entry.interruptId] = { result: fromMessage };
      return;
    }
    if (typeof payload === 'object' && payload !== null && Object.hasOwn(payload, 'result')) {
      // A front-end tool's result: its text, or any other JSON value as its JSON text.
      const result: unknown = (payload as { result: unknown }).result;
      // `{ result, approve: false }` is a result and a rejection at once: refused, never read as either.
      const other = Object.keys(payload).find((k) => k !== 'result');
      if (other !== undefined) throw bad(`${field}.payload.${other}`, 'a payload with a result has no other key');
      if (result === undefined) throw bad(`${field}.payload.result`, 'must be a JSON value');
      out[entry.interruptId] = { result: typeof result === 'string' ? result : JSON.stringify(result) };
      return;
    }
    const approve = (payload as { approve?: unknown } | null)?.approve;
    const reason = (payload as { reason?: unknown } | null)?.reason;
    if (typeof payload !== 'object' || payload === null || typeof approve !== 'boolean') {
      throw bad(`${field}.payload`, 'must be { approve: true }, { approve: false, reason? } or { result }');
    }
    if (reason !== undefined && typeof reason !== 'string') throw bad(`${field}.payload.reason`, 'must be a string');
    out[entry.interruptId] = approve ? { approve: true } : { approve: false, reason: reason ?? RESUME_REJECTED };
  });
  return out;
}

function toItem(message: Message, field: string): Item | undefined {
  switch (message.role) {
    case 'user':
      return { type: 'user', id: message.id, text: textOf(message.content, `${field}.content`) };
    case 'assistant':
      if (isMintedMessageId(message.id)) return undefined;
      if (message.toolCalls !== undefined && message.toolCalls.length > 0) {
        throw bad(`${field}.toolCalls`, 'tool calls made by the client are not supported');
      }
      return { type: 'assistant', id: message.id, text: message.content ?? '', toolCalls: [] };
    case 'tool':
      if (isMintedMessageId(message.id)) return undefined;
      throw bad(field, "a front-end tool's result answers its interrupt: give a resume entry for its toolCallId");
    case 'system':
    case 'developer':
      throw bad(`${field}.role`, `${message.role} messages are not accepted: the agent has its own instructions`);
    default:
      return undefined; // activity, reasoning: what a UI shows, not conversation
  }
}

function textOf(content: string | readonly { type: string; text?: string }[], field: string): string {
  if (typeof content === 'string') return content;
  let text = '';
  content.forEach((part, j) => {
    if (part.type !== 'text' || typeof part.text !== 'string')
      throw bad(`${field}[${j}]`, 'only text parts are supported');
    text += part.text;
  });
  return text;
}

function isEmptyState(state: unknown): boolean {
  if (state === undefined || state === null) return true;
  return typeof state === 'object' && !Array.isArray(state) && Object.keys(state).length === 0;
}
