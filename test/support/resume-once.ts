/**
 * "Exactly once across resumes" (docs/run-control.md): a suspension whose batch is `deploy` (needs
 * approval) then `log` (free); the first resume approves `deploy` and then fails or is cancelled at one
 * checkpoint after `deploy` started; a second resume of the same suspension completes. Counts how many
 * times each tool executed, and what the second resume's model read for each call.
 */
import { NEVER, defer } from 'rxjs';
import { z } from 'zod';
import {
  ModelCallError,
  defineAgent,
  isConcurrentRunError,
  resume,
  start,
  tool,
  type Item,
  type Lease,
  type RunEvent,
  type RunOptions,
  type Session,
  type Suspended,
  type ToolContext,
} from '../../src/index.js';
import { scriptedModel, sequentialIds, type ScriptedStep } from '../../src/testing/index.js';

/** Where the first resumed run ends, after `deploy` started. */
export type Checkpoint = 'tool running' | 'next model request' | 'model stream' | 'commit';
/** How it ends there. */
export type Ending = 'fail' | 'cancel';

/** Every checkpoint after the approved call started, with each way it can end there. */
export const CASES: readonly (readonly [Checkpoint, Ending])[] = [
  ['tool running', 'cancel'],
  ['tool running', 'fail'],
  ['next model request', 'cancel'],
  ['next model request', 'fail'],
  ['model stream', 'cancel'],
  ['model stream', 'fail'],
  ['commit', 'fail'],
];

/** What one scenario saw. */
export interface Outcome {
  /** `deploy` and `log` executions over both resumes. */
  readonly executions: { readonly deploy: number; readonly log: number };
  /** The first resume's terminal event type. */
  readonly firstEnd: string;
  /** The second resume's terminal event type. */
  readonly secondEnd: string;
  /** `ctx.resumed` as each execution saw it. */
  readonly resumed: readonly (ToolContext['resumed'] | undefined)[];
  /** What the second resume's first model request held as each call's result: [output, interrupted]. */
  readonly readBySecond: Record<string, readonly [string, boolean | undefined] | undefined>;
  /** The error name of each `tool_call_failed` of the second resume. */
  readonly secondFailures: readonly string[];
}

const fatal = () => new ModelCallError('the model is down', { status: 400, retryable: false });

/**
 * The first resume's model steps (after the suspension's own), ending it at `checkpoint`; `cancel`
 * cancels the first resume (a cancel at the model request fires from inside the request, once the model
 * has been called). A stream that breaks is rescued once without streaming: the rescue fails too.
 */
function firstResumeSteps(checkpoint: Checkpoint, ending: Ending, cancel: () => void): (ScriptedStep | string)[] {
  if (checkpoint === 'next model request') {
    const cancelled = defer(() => (cancel(), NEVER));
    return [ending === 'fail' ? { error: fatal() } : { gate: cancelled }];
  }
  if (checkpoint === 'model stream') {
    const said = ['partly', ' said'];
    return ending === 'fail' ? [{ text: said, error: fatal() }, { error: fatal() }] : [{ text: said, hold: NEVER }];
  }
  if (checkpoint === 'commit') return ['all done'];
  return []; // tool running: the run ends before its next model request
}

/**
 * Runs one scenario on `session` (undefined: no session). `wrap` lets the caller give the first resume a
 * session whose commit fails (the 'commit' checkpoint); `extra` are more run options (a scheduler).
 */
export async function resumeTwice(
  checkpoint: Checkpoint,
  ending: Ending,
  session: Session | undefined,
  extra: Partial<RunOptions> = {},
): Promise<Outcome> {
  const executions = { deploy: 0, log: 0 };
  let cancelFirst = (): void => undefined;
  const resumed: (ToolContext['resumed'] | undefined)[] = [];
  let hang = checkpoint === 'tool running' && ending === 'cancel';
  const deploy = tool({
    name: 'deploy',
    description: 'deploys',
    parameters: z.object({}),
    needsApproval: true,
    execute: (_args, ctx) => {
      executions.deploy++;
      resumed.push(ctx.resumed);
      if (!hang) return 'deployed';
      void Promise.resolve().then(() => cancelFirst()); // cancelled while it runs
      return new Promise<string>(() => undefined);
    },
  });
  const log = tool({
    name: 'log',
    description: 'logs',
    parameters: z.object({}),
    execute: (_args, ctx) => {
      executions.log++;
      resumed.push(ctx.resumed);
      return 'logged';
    },
  });
  const model = scriptedModel([
    {
      toolCalls: [
        { name: 'deploy', callId: 'd1' },
        { name: 'log', callId: 'l1' },
      ],
    },
    ...firstResumeSteps(checkpoint, ending, () => cancelFirst()),
    'finished',
  ]);
  const agent = defineAgent({ name: 'ops', instructions: '', tools: [deploy, log], model });
  const common = { ...extra, ...(session ? { session } : {}), idGenerator: sequentialIds() };
  const first = await start(agent, 'ship it', { ...common, approvals: 'suspend' }).result;
  const suspended: Suspended = JSON.parse(JSON.stringify(first.suspended));
  const approve = { d1: { approve: true } } as const;
  await leaseFree(session);

  // The first resume, ended at the checkpoint.
  const failingHook = checkpoint === 'tool running' && ending === 'fail';
  const commitFails = checkpoint === 'commit';
  const firstSession = commitFails && session ? failingCommit(session) : session;
  const hooks = failingHook
    ? {
        afterToolCall: () => {
          throw new Error('the audit log is down');
        },
      }
    : undefined;
  const options1 = { ...common, ...(firstSession ? { session: firstSession } : {}), ...(hooks ? { hooks } : {}) };
  const handle1 = resume(agent, suspended, approve, options1);
  cancelFirst = () => handle1.cancel('the operator pressed Stop');
  let firstEnd = '';
  await new Promise<void>((done) => {
    handle1.events$.subscribe({
      next: (event: RunEvent) => {
        if (ending === 'cancel' && checkpoint === 'model stream' && event.type === 'text_delta') cancelFirst();
        if (event.type === 'run_completed' || event.type === 'run_failed' || event.type === 'run_cancelled') {
          firstEnd = event.type;
        }
      },
      error: () => done(),
      complete: () => done(),
    });
  });
  await handle1.result.catch(() => undefined);
  hang = false;
  await leaseFree(session);

  // The second resume of the same suspension.
  const handle2 = resume(agent, suspended, approve, common);
  const events: RunEvent[] = [];
  handle2.events$.subscribe((event) => events.push(event));
  await handle2.result.catch(() => undefined);
  const requests = model.requests;
  const second = requests[requests.length - 1]!;
  const readBySecond: Outcome['readBySecond'] = {};
  for (const callId of ['d1', 'l1']) {
    const item = second.items.find((i: Item) => i.type === 'tool_result' && i.callId === callId);
    readBySecond[callId] = item?.type === 'tool_result' ? [item.output, item.interrupted] : undefined;
  }
  const secondFailures = events.flatMap((e) => (e.type === 'tool_call_failed' ? [`${e.callId}:${e.error.name}`] : []));
  return {
    executions,
    firstEnd,
    secondEnd: ended(events.at(-1)),
    resumed,
    readBySecond,
    secondFailures,
  };
}

/**
 * Waits until the ended run's lease is released: a run releases it before its terminal event without
 * awaiting the store (docs/sessions.md), so a durable store may still hold it for a round trip.
 */
async function leaseFree(session: Session | undefined): Promise<void> {
  if (session?.acquire === undefined) return;
  for (let attempt = 0; ; attempt++) {
    try {
      const lease = (await session.acquire('lease-probe', { ttlMs: 1000 })) as Lease; // the stores answer no Observable
      await lease.release();
      return;
    } catch (err) {
      if (!isConcurrentRunError(err) || attempt === 100) throw err;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

/** A terminal event's type, and its error when it failed (so a failure says why). */
function ended(event: RunEvent | undefined): string {
  if (event?.type !== 'run_failed') return event?.type ?? '';
  return `run_failed ${event.stopReason}: ${event.error.name}: ${event.error.message}`;
}

/** `session` whose `append` fails (a full disk at the commit); everything else is the session's own. */
function failingCommit(session: Session): Session {
  return {
    load: () => session.load(),
    append: () => Promise.reject(new Error('disk full')),
    ...(session.acquire ? { acquire: (runId, options) => session.acquire!(runId, options) } : {}),
    ...(session.recordCallStart
      ? { recordCallStart: (suspensionId, callId) => session.recordCallStart!(suspensionId, callId) }
      : {}),
  };
}
