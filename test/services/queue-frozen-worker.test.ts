/**
 * A worker that is alive but frozen (SIGSTOP: a process that no longer runs, its sockets open and its Redis
 * subscription still counted) is declared lost by its lapsed heartbeat, not by its connections
 * (docs/scale-out.md, "Failure semantics"): its run gets exactly one `worker_lost` terminal, and a `cancel`
 * waiting on it answers, within the documented detection time. Let run again (SIGCONT), the worker writes
 * nothing more for that run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent } from '../../src/index.js';
import { allEvents, firstOf, queueFixture, sleep, type QueueFixture, type WorkerProcess } from './support/queue.js';

const P = 'alice';
const LOCK_MS = 2000;
const STALLED_MS = 1000;
let fx: QueueFixture | undefined;
let frozen: WorkerProcess | undefined;
afterEach(async () => {
  if (frozen?.child.exitCode === null) frozen.child.kill('SIGCONT');
  await fx?.cleanup();
  fx = frozen = undefined;
});

/** Executions of each tool call a worker printed (`exec <runId> <callId>`). */
const executions = (out: string, runId: string) => {
  const counts = new Map<string, number>();
  for (const m of out.matchAll(/^exec (\S+) (\S+)$/gm)) {
    if (m[1] === runId) counts.set(m[2]!, (counts.get(m[2]!) ?? 0) + 1);
  }
  return counts;
};

describe('queue liveness: a frozen worker is lost by its heartbeat, whatever its connections say', () => {
  it('SIGSTOP mid-tool: one worker_lost terminal per run, by a cancel or by the peer, within the detection time', async () => {
    fx = queueFixture();
    const w1 = await fx.worker({ lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS });
    frozen = w1;
    const start = (threadId: string) =>
      fx!.runs.start({ agent: 'queue-agent', threadId, input: '!tool 60000', principal: P });
    // `cancelled` gets a cancel; `watched` nobody's: the peer that takes its stalled job declares it lost.
    const [cancelled, watched] = [(await start('a')).runId, (await start('b')).runId];
    const delivered = [cancelled, watched].map((id) => {
      const events$ = fx!.runs.events(id, { principal: P });
      return { started: firstOf(events$, 'tool_call_started'), all: allEvents(events$) };
    });
    await Promise.all(delivered.map((d) => d.started));
    const w2 = await fx.worker({ lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS });
    w1.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    const answer = fx.runs.cancel(cancelled, 'stop', P).then((ok) => ({ ok, ms: Date.now() - stoppedAt }));
    const lostAt = delivered[1]!.all.then((events) => ({ events, ms: Date.now() - stoppedAt }));
    const { ok, ms: cancelMs } = await answer;
    const { ms: peerMs } = await lostAt;
    const events = await Promise.all(delivered.map((d) => d.all));
    // Let the frozen worker run again: its watchdog finds its heartbeat old and its writes are refused.
    w1.child.kill('SIGCONT');
    await sleep(LOCK_MS);
    const stored = await Promise.all(
      [cancelled, watched].map((id) => allEvents(fx!.runs.events(id, { principal: P }))),
    );
    const terminals = events.map((e) => e.filter(isTerminalEvent));
    const counts = [cancelled, watched].map((id) => [...executions(w1.out() + w2.out(), id).values()]).flat();
    console.log(
      `frozen worker: terminals delivered per run ${terminals.map((t) => t.length).join(',')} ` +
        `(${terminals
          .flat()
          .map((t) => t.stopReason)
          .join(',')}), stored ` +
        `${stored.map((e) => e.filter(isTerminalEvent).length).join(',')}; cancel answered ${ok} after ` +
        `${cancelMs} ms; the peer declared the other lost after ${peerMs} ms; events stored after SIGCONT ` +
        `${stored.map((e) => e.length).join(',')} (delivered ${events.map((e) => e.length).join(',')}); ` +
        `executions per call ${JSON.stringify(counts)}; control commands lost 0`,
    );
    for (const t of terminals) {
      expect(t).toHaveLength(1);
      expect(t[0]).toMatchObject({ type: 'run_failed', stopReason: 'worker_lost' });
    }
    expect(ok).toBe(false);
    // The heartbeat expires at most lockDurationMs after the freeze; a waiting cancel checks every 500 ms.
    expect(cancelMs).toBeLessThan(LOCK_MS + STALLED_MS + 3000);
    // The peer: lock lapse + stalled check + the heartbeat seen gone twice, half a lock apart.
    expect(peerMs).toBeLessThan(2 * LOCK_MS + STALLED_MS + 4000);
    expect(stored.map((e) => e.length)).toEqual(events.map((e) => e.length));
    for (const id of [cancelled, watched]) {
      const [state, terminal] = await fx.redis.hmget(`${fx.prefix}:${fx.queue}:lc:run:${id}`, 'state', 'terminal');
      expect([state, terminal]).toEqual(['ended', 'run_failed']);
    }
    expect(counts).toEqual([1, 1]);
  }, 60_000);
});
