/**
 * Redis restarted mid-run, keeping nothing (docs/scale-out.md, "Failure semantics"): every run's keys are gone.
 * The worker finds its runs' hashes gone (at its next heartbeat, or its next event) and cancels them with a
 * typed reason (`event_store_unavailable`), storing each terminal alone; every reader ends, with that terminal
 * or `RunNotFoundError`, and none waits forever.
 *
 * Every services spec shares the Redis on 6379 and the files run at the same time, so this spec restarts a
 * Redis of its own: the command `.ci/run` starts Redis with (`--save "" --appendonly no`: it keeps nothing), on
 * a port, directory and log file of this spec's.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, type RunEvent } from '../../src/index.js';
import { firstOf, queueFixture, sleep, type QueueFixture } from './support/queue.js';

const P = 'alice';
// 6440–6489: never the shared Redis's 6379 (6340 + pid % 50 once came to 6379 and shut the shared Redis down in
// the middle of CI), nor queue-faults' 6390–6439.
const PORT = 6440 + (process.pid % 50);
const dir = mkdtempSync(path.join(tmpdir(), 'loopctl-redis-restart-'));
/** `.ci/run`'s command, on this spec's port, directory and log file. */
const startRedis = () =>
  execFileSync('redis-server', [
    '--daemonize',
    'yes',
    '--bind',
    '127.0.0.1',
    '-::1',
    '--port',
    String(PORT),
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--logfile',
    path.join(dir, 'redis.log'),
  ]);
const stopRedis = () => {
  try {
    execFileSync('redis-cli', ['-p', String(PORT), 'shutdown', 'nosave']);
  } catch {
    // it is down already
  }
};
const waitUp = async () => {
  for (let i = 0; i < 200; i++) {
    try {
      execFileSync('redis-cli', ['-p', String(PORT), 'ping']);
      return;
    } catch {
      await sleep(25);
    }
  }
};

let fx: QueueFixture | undefined;
afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});
afterAll(() => {
  stopRedis();
  rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  readonly terminals: RunEvent[];
  readonly error?: string;
  readonly ms: number;
}

describe('queue: Redis restarted keeping nothing, mid-run', () => {
  it('every run is cancelled (event_store_unavailable) or its reader told RunNotFoundError; none waits', async () => {
    startRedis();
    await waitUp();
    fx = queueFixture({ url: `redis://127.0.0.1:${PORT}` });
    await fx.worker();
    const inputs = ['!tool 60000', '!stream 600 50', '!tool 60000'];
    const runIds = [];
    for (const [i, input] of inputs.entries()) {
      runIds.push((await fx.runs.start({ agent: 'queue-agent', threadId: `t${i}`, input, principal: P })).runId);
    }
    await Promise.all(
      runIds.map((id, i) =>
        firstOf(fx!.runs.events(id, { principal: P }), i === 1 ? 'text_delta' : 'tool_call_started'),
      ),
    );
    let restartedAt = 0;
    const outcomes = runIds.map(
      (id) =>
        new Promise<Outcome>((resolve) => {
          const terminals: RunEvent[] = [];
          const ms = () => Date.now() - restartedAt;
          const timer = setTimeout(() => resolve({ terminals, error: 'still waiting', ms: ms() }), 20_000);
          fx!.runs.events(id, { principal: P }).subscribe({
            next: (e) => void (isTerminalEvent(e) && terminals.push(e)),
            complete: () => (clearTimeout(timer), resolve({ terminals, ms: ms() })),
            error: (e: Error) => (clearTimeout(timer), resolve({ terminals, error: e.name, ms: ms() })),
          });
        }),
    );
    await sleep(200); // the readers are listening
    restartedAt = Date.now();
    stopRedis();
    startRedis();
    await waitUp();
    const outageMs = Date.now() - restartedAt;
    const ends = await Promise.all(outcomes);
    const stops = ends.map((o) => (o.terminals[0] as { reason?: { type?: string } } | undefined)?.reason?.type);
    console.log(
      `Redis restart (outage ${outageMs} ms): terminals delivered per run ${ends.map((o) => o.terminals.length)}` +
        ` (${stops.join(',')}); reader errors ${ends.map((o) => o.error ?? '-').join(',')}; ` +
        `readers still waiting ${ends.filter((o) => o.error === 'still waiting').length}; ` +
        `ended after ${ends.map((o) => o.ms).join(',')} ms`,
    );
    for (const end of ends) {
      expect(end.error).not.toBe('still waiting');
      expect(end.terminals.length).toBeLessThanOrEqual(1);
      if (end.error === undefined) {
        expect(end.terminals[0]).toMatchObject({
          type: 'run_cancelled',
          reason: { type: 'event_store_unavailable' },
        });
      } else expect(end.error).toBe('RunNotFoundError');
    }
    // The worker ended each run here too: its hashes say ended, with the terminal stored alone.
    for (const id of runIds) {
      const [state, terminal] = await fx.redis.hmget(`${fx.prefix}:${fx.queue}:lc:run:${id}`, 'state', 'terminal');
      expect([state, terminal]).toEqual(['ended', 'run_cancelled']);
    }
  }, 60_000);
});
