import { ZERO_USAGE } from '../items.js';
import { seqOf } from './keys.js';
import type { WireItem } from './requests.js';
import { next, type RunContext } from './worker-run.js';

/** What writing a lost worker's terminal needs: the scripts, the keys, the retention, the next run's queue. */
export type LostContext = Pick<RunContext, 'redis' | 'keys' | 'retainMs' | 'enqueue'>;

/**
 * The worker `owner` that ran the run is gone: `run_failed` (`worker_lost`) with the next seq after the last
 * stored event; every steering item its mailbox had (queued or held) goes back to the front of the thread's
 * queue. Refused (nothing written) when the run ended or changed hands meanwhile.
 */
export async function failLost(ctx: LostContext, runId: string, owner: string): Promise<void> {
  const { redis, keys } = ctx;
  const [last] = (await redis.xrevrange(keys.events(runId), '+', '-', 'COUNT', 1)) as [string, string[]][];
  const lastSeq = last ? seqOf(last[0]) : -1;
  let turn = 0;
  try {
    if (last) turn = (JSON.parse(last[1][1] ?? '{}') as { turn?: number }).turn ?? 0;
  } catch {
    turn = 0;
  }
  const held = Object.values(await redis.hgetall(keys.mailbox(runId)))
    .map((json) => JSON.parse(json) as WireItem & { n: number })
    .sort((a, b) => a.n - b.n)
    .map(({ id, content }) => ({ id, content }));
  const message = `the worker running this run (${owner}) was lost: its job stalled and its heartbeat expired`;
  const event = {
    type: 'run_failed',
    runId,
    seq: lastSeq + 1,
    turn,
    at: Date.now(),
    error: { name: 'WorkerLostError', message, worker: owner },
    stopReason: 'worker_lost',
    partial: [],
    undelivered: held,
    usage: ZERO_USAGE,
  };
  const args = [keys.ns, runId, String(lastSeq + 1), JSON.stringify(event), 'running', owner];
  await next(ctx, await redis.lcTerminal(...args, String(ctx.retainMs), '1', ''));
}
