/**
 * The fixture of the checkpoint fault specs (`onWorkerLost: 'continue'`, a worker SIGKILLed at a checkpoint of
 * a run, ./faults.ts): one Postgres schema and queue for the file, two worker processes taking runs (a killed one
 * is replaced), a baseline history (an uninterrupted run of the same scripted model), and `faulted`, which runs
 * a run with faults armed and gathers what the specs count.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Observable } from 'rxjs';
import { afterAll, beforeAll, expect } from 'vitest';
import { isTerminalEvent, type Item, type RunEvent } from '../../../src/index.js';
import { createSchema, PostgresSessionStore } from '../../../src/postgres/index.js';
import { armFault, type Fault } from './faults.js';
import { allEvents, gapless, queueFixture, sleep, type QueueFixture, type WorkerProcess } from './queue.js';

export const P = 'alice';

process.env['PGHOST'] ??= '127.0.0.1';
process.env['PGPORT'] ??= '5432';
process.env['PGUSER'] ??= 'postgres';
process.env['PGDATABASE'] ??= 'test';

/** What a faulted run came to. */
export interface Outcome {
  readonly runId: string;
  readonly events: readonly RunEvent[];
  /** The worker processes that died at the run's faults, in order. */
  readonly lost: readonly WorkerProcess[];
  readonly terminals: readonly RunEvent[];
  /** `fromTurn` of each `run_resumed`. */
  readonly fromTurns: readonly number[];
  /** The model calls of each turn (by turn number, as a string). */
  readonly modelCalls: ReadonlyMap<string, number>;
  /** The executions of each tool call (by call id). */
  readonly executions: ReadonlyMap<string, number>;
  /** The calls whose result in the history is not the tool's (interrupted: "its effects are unknown"). */
  readonly interrupted: ReadonlySet<string>;
  /** The thread's history. */
  readonly items: readonly Item[];
  /** The counts, as printed. */
  readonly line: string;
}

export interface CheckpointsFixture {
  /** The history of the baseline run of the file's input (thread `base`), as `history` gives it. */
  readonly baseline: () => readonly string[];
  /** The file's queue (its `queueRuns` and Redis). */
  readonly fx: () => QueueFixture;
  /** The file's Postgres session store (the workers' schema). */
  readonly store: () => PostgresSessionStore;
  /** A thread's history as words: ids left out, the `steering` texts and the `interrupted` calls' results too. */
  history(thread: string, interrupted?: ReadonlySet<string>): Promise<string[]>;
  /**
   * Starts a run of the input on `thread` with `faults` armed (one worker dies at each), lets `during` act on it
   * (`died`: the first worker's death), waits for its terminal event, replaces the dead workers.
   */
  faulted(
    thread: string,
    faults: readonly Fault[],
    during?: (runId: string, events$: Observable<RunEvent>, died: Promise<WorkerProcess>) => Promise<void>,
  ): Promise<Outcome>;
  /** What every case of a completed run checks: its killed workers, one terminal, no call run twice, the baseline. */
  expectOneCompletedRun(o: Outcome, thread: string): Promise<void>;
}

/**
 * Registers the file's hooks. `input`: the `!steps` directive every run of the file starts with; `steering`:
 * the steering texts left out of histories (their place depends on timing; the answer names them all the same).
 */
export function checkpointsFixture(input: string, steering: readonly string[] = []): CheckpointsFixture {
  const pool = new pg.Pool({ max: 4 });
  const schema = `loopctl_test_${process.pid}_checkpoints`;
  let store: PostgresSessionStore;
  let fx: QueueFixture;
  let dir: string;
  /** Every worker process the file started (a killed one's stdout counts too), and the two taking runs now. */
  const all: WorkerProcess[] = [];
  let live: WorkerProcess[] = [];
  let baseline: string[] = [];

  const startWorker = async () => {
    const w = await fx.worker({ pgSchema: schema, onWorkerLost: 'continue', faultDir: dir });
    all.push(w);
    return w;
  };

  async function history(thread: string, interrupted: ReadonlySet<string> = new Set()): Promise<string[]> {
    const items = (await store.session(`${P}/${thread}`).load()) as readonly Item[];
    return items.flatMap((item) => {
      if (item.type === 'user') return steering.includes(item.text) ? [] : [`user ${item.text}`];
      if (item.type === 'assistant') {
        return [`assistant ${item.text} ${item.toolCalls.map((c) => `${c.callId}(${c.arguments})`).join(',')}`];
      }
      if (item.type === 'tool_result')
        return interrupted.has(item.callId) ? [] : [`result ${item.callId} ${item.output}`];
      return [item.type];
    });
  }

  /** How many `<kind> <runId> <key>` lines (`exec`: a tool call's execution, `model`: a turn's model call) are out. */
  function counts(kind: 'exec' | 'model', runId: string): Map<string, number> {
    const found = new Map<string, number>();
    for (const w of all) {
      for (const m of w.out().matchAll(new RegExp(`^${kind} (\\S+) (\\S+)$`, 'gm'))) {
        if (m[1] === runId) found.set(m[2]!, (found.get(m[2]!) ?? 0) + 1);
      }
    }
    return found;
  }

  beforeAll(async () => {
    await createSchema(pool, { schema });
    store = new PostgresSessionStore(pool, { schema });
    fx = queueFixture({ sessions: store });
    dir = mkdtempSync(join(tmpdir(), 'loopctl-faults-'));
    live = await Promise.all([startWorker(), startWorker()]);
    const base = await fx.runs.start({ agent: 'queue-agent', threadId: 'base', input, principal: P });
    expect((await allEvents(fx.runs.events(base.runId, { principal: P }))).at(-1)?.type).toBe('run_completed');
    baseline = await history('base');
  }, 60_000);

  afterAll(async () => {
    await fx?.cleanup();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function faulted(
    thread: string,
    faults: readonly Fault[],
    during: (runId: string, events$: Observable<RunEvent>, died: Promise<WorkerProcess>) => Promise<void> = () =>
      Promise.resolve(),
  ): Promise<Outcome> {
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: thread, input, principal: P });
    armFault(dir, runId, ...faults);
    const events$ = fx.runs.events(runId, { principal: P });
    const delivered = allEvents(events$);
    const lost: WorkerProcess[] = [];
    const replacements: Promise<WorkerProcess>[] = [];
    // Each death: a new worker takes the dead one's place (two take runs while the run goes on).
    const nextDeath = () =>
      Promise.race(live.map((w) => w.exited.then(() => w))).then((w) => {
        lost.push(w);
        live = live.filter((l) => l !== w);
        const replacement = startWorker();
        replacements.push(replacement);
        void replacement.then((r) => (live = [...live, r]));
        return w;
      });
    let deaths = nextDeath();
    const died = deaths;
    for (let k = 1; k < faults.length; k++) {
      deaths = deaths.then(async () => {
        await Promise.all(replacements);
        return nextDeath();
      });
    }
    await during(runId, events$, died);
    await deaths;
    const events = await delivered;
    await Promise.all(replacements);

    const terminals = events.filter(isTerminalEvent);
    const fromTurns = events.flatMap((e) => (e.type === 'run_resumed' ? [e.fromTurn] : []));
    const modelCalls = counts('model', runId);
    const executions = counts('exec', runId);
    const items = (await store.session(`${P}/${thread}`).load()) as readonly Item[];
    const interrupted = new Set(
      items.flatMap((i) => (i.type === 'tool_result' && !i.output.startsWith('waited') ? [i.callId] : [])),
    );
    const again = [...modelCalls].flatMap(([turn, n]) => (n > 1 ? [`turn ${turn} x${n}`] : []));
    const calls = [...modelCalls.values()].reduce((a, b) => a + b, 0);
    const line =
      `terminals ${terminals.length} (${terminals.map((t) => t.type).join(',')}); ` +
      `run_resumed ${fromTurns.length} (fromTurn ${fromTurns.join(',') || '-'}); ` +
      `model calls ${calls} (made again: ${again.join(',') || 'none'}); ` +
      `tool calls executed ${executions.size}, most executions of one call ${Math.max(...executions.values())}; ` +
      `interrupted ${[...interrupted].join(',') || 'none'}`;
    return { runId, events, lost, terminals, fromTurns, modelCalls, executions, interrupted, items, line };
  }

  async function expectOneCompletedRun(o: Outcome, thread: string): Promise<void> {
    for (const w of o.lost) expect(await w.exited).toBe('SIGKILL');
    expect(o.terminals.map((t) => t.type)).toEqual(['run_completed']);
    expect(gapless(o.events)).toBe(true);
    expect(o.events.filter((e) => e.type === 'run_started')).toHaveLength(1);
    expect([...o.executions.values()].every((n) => n <= 1)).toBe(true);
    const isResult = (word: string) => [...o.interrupted].some((c) => word.startsWith(`result ${c} `));
    expect(await history(thread, o.interrupted)).toEqual(baseline.filter((w) => !isResult(w)));
    // Its journal is discarded by the worker that stored its terminal, once it stored (src/bullmq/worker-run.ts
    // `finish`: a terminal refused means another claim goes on from it): waited for here, up to 5 s.
    const journalled = () => store.session(`${P}/${thread}`).journalledRuns();
    for (let i = 0; i < 50 && (await journalled()).includes(o.runId); i++) await sleep(100);
    expect(await journalled()).not.toContain(o.runId);
  }

  return {
    baseline: () => baseline,
    fx: () => fx,
    store: () => store,
    history,
    faulted,
    expectOneCompletedRun,
  };
}
