import { isTerminalEvent, type FinishReason, type RunEventDraft } from '../events.js';
import {
  ZERO_USAGE,
  addUsage,
  type AssistantItem,
  type Item,
  type SummaryItem,
  type ToolResultItem,
  type Usage,
  type UserItem,
} from '../items.js';
import type { MailboxToken } from '../mailbox/mailbox.js';
import { Scratchpad } from './scratchpad.js';

/**
 * What a stage tells the run about an event besides the event itself. It rides with the draft
 * into the run's `emit` and is folded into the run's totals there; it never reaches a
 * subscriber. Each field belongs to the event types named on it.
 */
export interface Fact {
  /** The first `user_message_injected` of a drain: every token taken from the mailbox ("drain after turnStarted"). */
  readonly taken?: readonly MailboxToken[];
  /** `user_message_injected`: where its `user` Item goes among the run's Items; absent: last ("arrival order"). */
  readonly index?: number;
  /** `model_response_completed`: the response as an assistant Item, its tool calls repaired. */
  readonly item?: AssistantItem;
  /** `tool_call_completed` / `tool_call_failed`: the result Item the model gets. */
  readonly result?: ToolResultItem;
  /** A recovery event (or the next request): the usage of failed attempts that had returned a response (billed). */
  readonly billed?: Usage;
  /** The first `turn_started` after a session load: the input, its call ids kept apart from the history's. */
  readonly input?: readonly Item[];
  /** `turn_completed`: the `user` Item of a repair turn (an answer refused by the agent's `output` schema). */
  readonly repair?: UserItem;
  /** `compaction_completed`: the summary Item added to the run's Items (docs/long-runs.md, "Compaction"). */
  readonly summary?: SummaryItem;
  /** `guardrail_tripped` with `action: 'refuse_answer'`: the assistant Item that replaces the refused answer. */
  readonly refusal?: AssistantItem;
  /** `text_delta`: the whole text of a response that streamed none; not streamed text, so not kept for `partial`. */
  readonly whole?: true;
}

/**
 * A run's totals, folded from the events it stamps (and their facts): the turn number, the usage
 * (every response, billed failed attempts and direct sub-runs' terminal usage), the run's new Items
 * (guarantee 6: scratchpad: only a completed run commits) and the steering it drained
 * (guarantee 7: no steering lost or duplicated).
 */
export class RunTotals {
  turn = 0;
  usage: Usage = ZERO_USAGE;
  /** The `finishReason` of the run's last model response (a stopped run's); undefined before the first. */
  finishReason: FinishReason | undefined;
  readonly drained: MailboxToken[] = [];
  readonly scratch: Scratchpad;

  constructor(input: readonly Item[], scratch?: Scratchpad) {
    this.scratch = scratch ?? new Scratchpad(input);
  }

  /** The totals of a resumed run: its Items are the suspended run's, its open batch restored; its usage goes on. */
  static resumed(items: readonly Item[], usage: Usage): RunTotals {
    const totals = new RunTotals(items, Scratchpad.resumed(items));
    totals.usage = usage;
    return totals;
  }

  fold(draft: RunEventDraft, fact: Fact | undefined): void {
    if (fact?.billed !== undefined) this.usage = addUsage(this.usage, fact.billed);
    switch (draft.type) {
      case 'turn_started':
        this.turn++;
        if (fact?.input !== undefined) this.scratch.replaceInput(fact.input);
        return;
      case 'user_message_injected': {
        const item = { type: 'user', id: draft.id, text: draft.content } as const;
        if (fact?.taken !== undefined) for (const token of fact.taken) this.drained.push(token);
        if (fact?.index !== undefined) this.scratch.insert(fact.index, item);
        else this.scratch.add(item);
        return;
      }
      case 'model_request_started':
        // A rescue keeps the broken stream's text for `partial` until it has an answer of its own.
        if (draft.cause !== 'rescue') this.scratch.streamingText = '';
        return;
      case 'text_delta':
        if (fact?.whole === undefined) this.scratch.streamingText += draft.delta;
        return;
      case 'model_response_completed':
        this.usage = addUsage(this.usage, draft.usage);
        this.finishReason = draft.finishReason;
        if (fact?.item !== undefined) this.scratch.addResponse(fact.item);
        return;
      case 'tool_call_completed':
      case 'tool_call_failed':
        if (fact?.result !== undefined) this.scratch.addResult(fact.result);
        return;
      case 'guardrail_tripped':
        if (fact?.refusal !== undefined) this.scratch.add(fact.refusal);
        return;
      case 'compaction_completed':
        if (fact?.summary !== undefined) this.scratch.add(fact.summary);
        return;
      case 'turn_completed':
        this.scratch.endBatch();
        if (fact?.repair !== undefined) this.scratch.add(fact.repair);
        return;
      case 'subrun_event':
        // A direct sub-run's terminal usage already holds its own sub-runs' (nested ones are relayed too).
        if (draft.path.length !== 1 || !isTerminalEvent(draft.event)) return;
        this.usage = addUsage(this.usage, draft.event.usage);
        return;
      default:
        return;
    }
  }
}
