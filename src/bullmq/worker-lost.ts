import { lastValueFrom } from 'rxjs';
import { ZERO_USAGE, type Item } from '../items.js';
import { toLastValue } from '../last-value.js';
import { seqOf } from './keys.js';
import type { WireItem } from './requests.js';
import { commitKeyOf } from './shared.js';
import { claimNumber, discardJournal, next, type RunContext } from './worker-run.js';

/** What ending a lost worker's run needs: the scripts, the keys, the retention, the next run's queue, the store. */
export type LostContext = Pick<RunContext, 'redis' | 'keys' | 'retainMs' | 'enqueue' | 'sessions' | 'continueRuns'>;

/**
 * What a peer found of a lost claim's session commit: `'committed'` (it stored: the run's outcome is the
 * completed one), `'fenced'` (it did not, and now never will: the lost worker's commit, landing later, stores
 * nothing), `undefined` when the store cannot fence (no store, or one without `fenceRun`), or `'moved'` when
 * the run is no longer `owner`'s running claim (nothing was fenced).
 */
export type LostCommit = 'committed' | 'fenced' | 'moved' | undefined;

/**
 * Fences off the session commit of `owner`'s claim of the run (`Session.fenceRun` on the claim's commit key;
 * without `continueRuns`, a first claim's `<runId>#1` too, the key a continuing worker commits it under):
 * after it, the claim's commit either stored or never will; the run's session lease is released first
 * (`Session.releaseRun`), and the claim's journal writes are fenced off (`Session.fenceJournal`, when the store
 * has it: a write of the lost claim landing later is refused). Read with the claim in one step: a run whose owner
 * is `owner` and state `running` still has that owner's claim token (each claim sets both).
 */
export async function fenceLost(ctx: LostContext, runId: string, owner: string): Promise<LostCommit> {
  const [state, who, thread, claim] = await ctx.redis.hmget(ctx.keys.run(runId), 'state', 'owner', 'thread', 'claim');
  if (state !== 'running' || who !== owner) return 'moved';
  if (ctx.sessions === undefined || !thread) return undefined;
  const session = await ctx.sessions.session(thread);
  // Its lease is released at once: the run is known ended there (a rerun, or the thread's next run, need not
  // wait for the lease's ttl).
  if (typeof session.releaseRun === 'function') await lastValueFrom(toLastValue(session.releaseRun(runId)));
  // Its journal writes are fenced off too (a frozen worker that wakes must not write a turn the next claim
  // did not go on from): the lost claim's and every earlier one's are refused from now on.
  const lost = claimNumber(claim ?? '');
  if (lost !== undefined && typeof session.fenceJournal === 'function') {
    await lastValueFrom(toLastValue(session.fenceJournal(runId, lost)));
  }
  if (typeof session.fenceRun !== 'function') return undefined;
  const fence = (key: string) => lastValueFrom(toLastValue(session.fenceRun!(key)));
  const perClaim = ctx.continueRuns === true;
  const key = commitKeyOf(runId, claim ?? '', perClaim);
  const verdict = await fence(key);
  // A peer that does not continue runs (an API process, a worker with another `onWorkerLost`) fences a first
  // claim's per-claim key too: that claim may be a continuing worker's, whose commit key it is.
  if (perClaim || !claim || key === `${runId}#${claim}`) return verdict;
  return (await fence(`${runId}#${claim}`)) === 'committed' ? 'committed' : verdict;
}

/**
 * The worker `owner` that ran the run is gone. Its commit is fenced off first ({@link fenceLost}); then:
 * - the commit stored: `run_completed` (the commit decides the outcome), its output the session's last
 *   assistant text, usage unknown (zero); the steering the session holds (by id) was committed and is dropped,
 *   the rest of its mailbox goes back to the front of the thread's queue;
 * - otherwise: `run_failed` (`worker_lost`) with the next seq after the last stored event; every steering
 *   item its mailbox had (queued or held) goes back to the front of the thread's queue.
 * Refused (nothing written) when the run ended or changed hands meanwhile. `commit`: a verdict
 * {@link fenceLost} gave already.
 */
export async function failLost(
  ctx: LostContext,
  runId: string,
  owner: string,
  commit?: LostCommit | Promise<LostCommit>,
): Promise<void> {
  const verdict = await (commit ?? fenceLost(ctx, runId, owner));
  if (verdict === 'moved') return;
  const { redis, keys } = ctx;
  const [last] = (await redis.xrevrange(keys.events(runId), '+', '-', 'COUNT', 1)) as [string, string[]][];
  const lastSeq = last ? seqOf(last[0]) : -1;
  let turn = 0;
  try {
    if (last) turn = (JSON.parse(last[1][1] ?? '{}') as { turn?: number }).turn ?? 0;
  } catch {
    turn = 0;
  }
  const committed = verdict === 'committed';
  // The commit stored: the session says which steering it delivered (its Items keep the steering ids).
  const history = committed ? await sessionItems(ctx, runId) : [];
  const inSession = new Set(history.flatMap((item) => (item.type === 'tool_result' ? [] : [item.id])));
  const mailbox = Object.values(await redis.hgetall(keys.mailbox(runId)))
    .map((json) => JSON.parse(json) as WireItem & { n: number })
    .filter((item) => !inSession.has(item.id))
    .sort((a, b) => a.n - b.n);
  const held = mailbox.map(({ id, content }) => ({ id, content }));
  const base = { runId, seq: lastSeq + 1, turn, at: Date.now(), undelivered: held, usage: ZERO_USAGE };
  const message = `the worker running this run (${owner}) was lost: its job stalled and its heartbeat expired`;
  const event = committed
    ? {
        type: 'run_completed',
        ...base,
        stopReason: 'completed',
        output: lastAssistantText(history),
        finishReason: 'stop',
      }
    : {
        type: 'run_failed',
        ...base,
        error: { name: 'WorkerLostError', message, worker: owner },
        stopReason: 'worker_lost',
        partial: [],
      };
  const args = [keys.ns, runId, String(lastSeq + 1), JSON.stringify(event), 'running', owner, String(ctx.retainMs)];
  const back = mailbox.map(({ id, content, mac }) => JSON.stringify({ id, content, mac }));
  const result = committed
    ? await redis.lcTerminal(...args, '0', '', ...back)
    : await redis.lcTerminal(...args, '1', '');
  // The run ended: its journal (`onWorkerLost: 'continue'`), if it has one, is done with.
  const thread = ctx.sessions !== undefined ? await redis.hget(keys.run(runId), 'thread').catch(() => null) : null;
  if (thread && typeof result[0] === 'number' && result[0] >= 0) await discardJournal(ctx, thread, runId);
  await next(ctx, result);
}

/** The run's thread's history ([] when it cannot be read: the outcome is decided by the commit already). */
async function sessionItems(ctx: LostContext, runId: string): Promise<readonly Item[]> {
  try {
    const thread = await ctx.redis.hget(ctx.keys.run(runId), 'thread');
    if (!thread || !ctx.sessions) return [];
    const session = await ctx.sessions.session(thread);
    return (await lastValueFrom(toLastValue(session.load()))) as readonly Item[];
  } catch {
    return [];
  }
}

/** The text of the last assistant Item of `items` (what a committed run answered), or ''. */
function lastAssistantText(items: readonly Item[]): string {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    if (item.type === 'assistant') return item.text;
  }
  return '';
}

/** At most this many characters of a lost call's output in the note a rerun's model gets. */
const NOTE_OUTPUT_CHARS = 200;

/**
 * The note a rerun's model gets (`onWorkerLost: 'retry_once'`) about the tool calls the lost claim started (its
 * stored `tool_call_started` events): each with what became of it — its output, its error, or "interrupted" (it
 * may or may not have taken effect). The rerun starts from the last commit, so none of them is in its history:
 * told, the model decides whether to call again, instead of the call being run again silently. Undefined when
 * the lost claim started no call.
 */
export async function lostCallsNote(
  ctx: Pick<LostContext, 'redis' | 'keys'>,
  runId: string,
): Promise<string | undefined> {
  const entries = (await ctx.redis.xrange(ctx.keys.events(runId), '-', '+')) as [string, string[]][];
  const calls = new Map<string, { name: string; args: string; end?: string }>();
  for (const [, fields] of entries) {
    let event: {
      type?: string;
      callId?: string;
      name?: string;
      arguments?: string;
      output?: string;
      error?: { message?: string };
    };
    try {
      event = JSON.parse(fields[1] ?? '{}') as typeof event;
    } catch {
      continue;
    }
    if (event.type === 'tool_call_started' && event.callId) {
      calls.set(event.callId, { name: event.name ?? '', args: event.arguments ?? '' });
    }
    const call = event.callId ? calls.get(event.callId) : undefined;
    if (call && event.type === 'tool_call_completed') call.end = `it completed: ${clip(event.output ?? '')}`;
    if (call && event.type === 'tool_call_failed') call.end = `it failed: ${clip(event.error?.message ?? '')}`;
  }
  if (calls.size === 0) return undefined;
  const lines = [...calls.values()].map(
    (c) => `- ${c.name} ${clip(c.args)}: ${c.end ?? 'interrupted; it may or may not have taken effect'}`,
  );
  return (
    'Note: this run was restarted after the worker running it was lost. These tool calls had started there ' +
    `and are not in the history; they are not run again unless you call them:\n${lines.join('\n')}`
  );
}

const clip = (text: string) => (text.length > NOTE_OUTPUT_CHARS ? `${text.slice(0, NOTE_OUTPUT_CHARS)}…` : text);
