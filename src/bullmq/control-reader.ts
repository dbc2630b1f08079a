import { refusalOf, type RunOp } from '../control/command.js';
import { QueueAuthError } from './auth.js';
import { answer, readRequest, type Envelope, type WorkerReply } from './requests.js';
import { onRequest, type LocalRun, type RunContext } from './worker-run.js';

/** How often a worker reads the control hashes of its live runs (ms): the bound on a command whose wake-up was lost. */
export const CONTROL_POLL_MS = 250;

/**
 * A worker's reader of its runs' durable control (docs/scale-out.md, "Control is state"): `read(runIds)` takes
 * every pending record of those runs (live here) in the order recorded, each exactly once however often it is
 * read (the take script, by command id), and applies it (`onRequest`). A record that is not signed for its run
 * is dropped with a `QueueAuthError` refusal; a command id taken before is refused `replayed`; steering for a
 * run that ended here is dropped with `not_here` (the caller routes it again). Never rejects.
 */
export function controlReader(ctx: RunContext, live: ReadonlyMap<string, LocalRun>) {
  const { redis, keys, auth } = ctx;
  const reply = (runId: string, to: Envelope, r: WorkerReply) => void answer(redis, auth, keys, runId, to, r);
  const refuse = (runId: string, to: Envelope, op: RunOp | undefined, error: unknown) =>
    reply(runId, to, { kind: 'result', result: { ok: false, op, error: refusalOf(error) } });
  const take = async (runId: string, cid: string, how: 'apply' | 'drop') =>
    (await redis.lcTake(keys.ns, runId, cid, how))[0];

  async function apply(runId: string, cid: string, json: string): Promise<void> {
    const run = live.get(runId);
    if (run === undefined) return; // not this worker's: left for the one that runs it
    const read = readRequest(json, auth);
    if (!read.ok) {
      if ((await take(runId, cid, 'drop')) === 1) refuse(runId, read.envelope, undefined, read.refusal);
      return;
    }
    const { request } = read;
    if (request.runId !== runId || request.cid !== cid) {
      const error = new QueueAuthError('mis_signed', 'the command is signed for another run or command id');
      if ((await take(runId, cid, 'drop')) === 1) refuse(runId, request, request.command.op, error);
      return;
    }
    const steering = request.command.op === 'steer' || request.command.op === 'withdraw';
    if (run.ended && steering) {
      if ((await take(runId, cid, 'drop')) === 1) reply(runId, request, { kind: 'not_here' });
      return;
    }
    const took = await take(runId, cid, 'apply');
    if (took === -1) {
      const error = new QueueAuthError('replayed', `command ${cid} was applied to this run already`);
      return refuse(runId, request, request.command.op, error);
    }
    if (took === 1) onRequest(ctx, run, request);
  }

  return {
    async read(runIds: readonly string[]): Promise<void> {
      const mine = runIds.filter((id) => live.has(id));
      if (mine.length === 0) return;
      try {
        const flat = await redis.lcPending(keys.ns, ...mine);
        const records: { runId: string; cid: string; n: number; json: string }[] = [];
        for (let i = 0; i + 2 < flat.length; i += 3) {
          const value = flat[i + 2]!;
          const cut = value.indexOf('\n');
          records.push({
            runId: flat[i]!,
            cid: flat[i + 1]!,
            n: Number(value.slice(0, cut)),
            json: value.slice(cut + 1),
          });
        }
        records.sort((a, b) => a.n - b.n);
        for (const r of records) await apply(r.runId, r.cid, r.json).catch(() => undefined);
      } catch {
        // Redis unreachable: the next poll or the reconnect reads again
      }
    },
  };
}
