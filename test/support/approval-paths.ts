import { z } from 'zod';
import {
  Mailbox,
  MemorySession,
  RunControl,
  defineAgent,
  resume,
  run,
  start,
  tool,
  type Agent,
  type ApprovalDecision,
  type Item,
  type RunEvent,
  type Suspended,
} from '../../src/index.js';
import { collectEvents, scriptedModel, type ScriptedStep } from '../../src/testing/index.js';

/**
 * The two ways of deciding tool approvals ("approvals", docs/run-control.md), run over one script:
 * the waiting path (decisions through a RunControl while the run waits) and the suspend path (each
 * batch with pending calls suspends; the suspension goes through JSON.stringify/parse; resume() goes on
 * with the decisions). Steering may be pushed at each approval moment: while the run waits, or while
 * it is suspended.
 */
export interface ApprovalScript {
  /** Each turn's tool calls (`gated` needs approval, `maybe` asks its `needsApproval` function, `free` does not). */
  readonly turns: readonly (readonly { readonly tool: 'gated' | 'maybe' | 'free'; readonly ask?: boolean }[])[];
  /** The decision of each call that needs approval, by call id (missing: approve). */
  readonly reject: ReadonlySet<string>;
  /** Steering pushed when the first call of turn N awaits a decision (turn numbers from 1). */
  readonly steerAt: ReadonlySet<number>;
  /** Decide in the tool_approval_requested handler (true) or a macrotask later (false). Waiting path only. */
  readonly syncDecisions: boolean;
  readonly parallel: boolean;
}

export const callId = (turn: number, i: number): string => `c${turn}_${i}`;

export function makeAgent(script: ApprovalScript): Agent {
  const steps: ScriptedStep[] = script.turns.map((calls, t) => ({
    toolCalls: calls.map((c, i) => ({ name: c.tool, callId: callId(t + 1, i), arguments: { ask: c.ask ?? false } })),
  }));
  steps.push({ text: 'done' }, { text: 'done again' }, { text: 'done once more' });
  const args = z.object({ ask: z.boolean() });
  const tools = [
    tool({ name: 'gated', description: 'gated', parameters: args, needsApproval: true, execute: () => 'G' }),
    tool({
      name: 'maybe',
      description: 'maybe',
      parameters: args,
      needsApproval: async ({ ask }) => ask,
      execute: () => 'M',
    }),
    tool({ name: 'free', description: 'free', parameters: args, execute: () => 'F' }),
  ];
  const parallel = script.parallel ? { parallelToolCalls: { maxConcurrency: 2 } } : {};
  const model = scriptedModel(steps);
  return defineAgent({ name: 'approver', instructions: '', model, tools, maxTurns: 50, ...parallel });
}

const decisionOf = (script: ApprovalScript, id: string): ApprovalDecision =>
  script.reject.has(id) ? { approve: false, reason: `no to ${id}` } : { approve: true };

const counter = (prefix: string) => {
  let n = 0;
  return () => `${prefix}-${++n}`;
};

export interface PathResult {
  readonly events: RunEvent[];
  readonly history: readonly Item[];
  readonly steered: string[];
  readonly suspensions: number;
}

/** The waiting path: one run; decisions (and steering) given while it waits. */
export async function waitingPath(script: ApprovalScript): Promise<PathResult> {
  const session = new MemorySession();
  const mailbox = new Mailbox({ idGenerator: counter('steer') });
  const control = new RunControl();
  const ids = counter('id');
  const steered: string[] = [];
  const steeredTurns = new Set<number>();
  const events = await new Promise<RunEvent[]>((resolve, reject) => {
    const out: RunEvent[] = [];
    run(makeAgent(script), 'go', { session, mailbox, control, idGenerator: () => ids() }).subscribe({
      next: (e) => {
        out.push(e);
        if (e.type !== 'tool_approval_requested') return;
        if (script.steerAt.has(e.turn) && !steeredTurns.has(e.turn)) {
          steeredTurns.add(e.turn);
          steered.push(mailbox.push(`steer in turn ${e.turn}`).id);
        }
        const decide = () => {
          const d = decisionOf(script, e.callId);
          if (d.approve) control.approve(e.callId);
          else control.reject(e.callId, d.reason);
        };
        if (script.syncDecisions) decide();
        else setTimeout(decide, 0);
      },
      error: reject,
      complete: () => resolve(out),
    });
  });
  return { events, history: session.items, steered, suspensions: 0 };
}

/** The suspend path: suspend at each batch with pending calls, JSON round trip, resume with the decisions. */
export async function suspendPath(script: ApprovalScript): Promise<PathResult> {
  const session = new MemorySession();
  const mailbox = new Mailbox({ idGenerator: counter('steer') });
  const ids = counter('id');
  const agent = makeAgent(script);
  const options = { session, mailbox, approvals: 'suspend' as const, idGenerator: () => ids() };
  const steered: string[] = [];
  let handle = start(agent, 'go', options);
  let events = await collectEvents(handle.events$);
  const all: RunEvent[] = [];
  let suspensions = 0;
  for (;;) {
    const result = await handle.result;
    all.push(...(all.length === 0 ? events : events.slice(1))); // a resumed run's run_started is its own
    if (result.suspended === undefined) break;
    suspensions++;
    all.pop(); // the suspended run's terminal: the waiting path has none there
    const saved: Suspended = JSON.parse(JSON.stringify(result.suspended));
    if (script.steerAt.has(saved.turn)) steered.push(mailbox.push(`steer in turn ${saved.turn}`).id);
    const decisions = Object.fromEntries(saved.pending.map((c) => [c.callId, decisionOf(script, c.callId)]));
    handle = resume(agent, saved, decisions, options);
    events = await collectEvents(handle.events$);
  }
  return { events: all, history: session.items, steered, suspensions };
}

/** Events without what differs between two runs of one path (`runId`, `seq`, `at`). */
export function comparable(events: readonly RunEvent[]): object[] {
  return events.map(({ runId: _r, seq: _s, at: _a, ...rest }) => rest);
}

/** A history with each Item id replaced by the order it first appears in (the paths draw ids differently). */
export function normalizedIds(history: readonly Item[]): Item[] {
  const seen = new Map<string, string>();
  const norm = (id: string) => {
    if (!seen.has(id)) seen.set(id, `#${seen.size}`);
    return seen.get(id)!;
  };
  return history.map((item) => (item.type === 'tool_result' ? item : { ...item, id: norm(item.id) }));
}
