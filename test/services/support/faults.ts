/**
 * Deterministic SIGKILLs of a queue worker process at checkpoints of one run (the fault specs): the spec writes
 * the run's {@link Fault}s, in order, to `<dir>/<runId>.json` (`armFault`) and the worker processes started with
 * `faultDir: dir` (./queue-worker.ts) check the first one at each checkpoint. The process that reaches its
 * checkpoint takes the file (a rename: one process wins), leaves the other faults for the next claim of the run,
 * and SIGKILLs itself there; the run's last continue finds no fault and runs on.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PostgresSessionStore } from '../../../src/postgres/index.js';
import type { Session } from '../../../src/index.js';

/**
 * Where the worker running the run SIGKILLs itself: `stream`, in the model's stream of turn `turn` after its
 * second text delta (`!steps … D`, ./queue-agent.ts); `journal-before` / `journal-after`, just before the
 * `journalTurn` write of turn `turn` is sent / just after it stored; `response-before` / `response-after`, the
 * same about the `journalResponse` write of turn `turn` (its model response, before its tools run);
 * `commit-before` / `commit-after`, just before the run's session commit (an append with a run id) is sent / just
 * after it stored; `discard-before`, just before the run's journal is discarded (after its terminal is stored).
 */
export type Fault =
  | {
      readonly at: 'stream' | 'journal-before' | 'journal-after' | 'response-before' | 'response-after';
      readonly turn: number;
    }
  | { readonly at: 'commit-before' | 'commit-after' | 'discard-before'; readonly turn?: undefined };

/** Arms `faults` for the run `runId` in `dir`: the first for the claim running it, the next for the next claim. */
export function armFault(dir: string, runId: string, ...faults: Fault[]): void {
  writeFileSync(join(dir, `${runId}.json`), JSON.stringify(faults));
}

/**
 * True once for the run's first armed fault when it is at `at` (and `turn`): this process took it, and must die
 * now (the rest stay armed). False when no fault is armed for the run there, or another process took it.
 */
export function tripFault(dir: string | undefined, runId: string, at: Fault['at'], turn?: number): boolean {
  if (dir === undefined) return false;
  const file = join(dir, `${runId}.json`);
  let faults: { at?: string; turn?: number }[];
  try {
    faults = JSON.parse(readFileSync(file, 'utf8')) as typeof faults;
  } catch {
    return false;
  }
  const [first, ...rest] = faults;
  if (first?.at !== at || first.turn !== turn) return false;
  try {
    renameSync(file, `${file}.${process.pid}`);
  } catch {
    return false;
  }
  if (rest.length > 0) writeFileSync(file, JSON.stringify(rest));
  return true;
}

/** SIGKILLs this process (never returns). */
export function die(why: string): never {
  process.stdout.write(`dying ${why}\n`);
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}

/**
 * The session `id` of `store` with the journal and commit checkpoints of the faults armed in `dir`. Every other
 * method is the session's own, called on it (a store's sessions keep private state).
 */
export function faultySession(store: PostgresSessionStore, id: string, dir: string): Session {
  const session = store.session(id);
  const hooks: Partial<Session> = {
    journalTurn: async (runId, turn, items, options) => {
      if (tripFault(dir, runId, 'journal-before', turn)) die(`before journal ${runId} ${turn}`);
      await session.journalTurn(runId, turn, items, options);
      if (tripFault(dir, runId, 'journal-after', turn)) die(`after journal ${runId} ${turn}`);
    },
    journalResponse: async (runId, turn, items, options) => {
      if (tripFault(dir, runId, 'response-before', turn)) die(`before response ${runId} ${turn}`);
      await session.journalResponse(runId, turn, items, options);
      if (tripFault(dir, runId, 'response-after', turn)) die(`after response ${runId} ${turn}`);
    },
    discardJournal: async (runId) => {
      if (tripFault(dir, runId, 'discard-before')) die(`before discard ${runId}`);
      await session.discardJournal(runId);
    },
    append: async (items, options) => {
      // A queued run commits under `<runId>#<claim>` with `onWorkerLost: 'continue'`.
      const runId = options?.runId?.replace(/#.*$/, '');
      if (runId !== undefined && tripFault(dir, runId, 'commit-before')) die(`before commit ${options!.runId}`);
      await session.append(items, options);
      if (runId !== undefined && tripFault(dir, runId, 'commit-after')) die(`after commit ${options!.runId}`);
    },
  };
  return new Proxy(session, {
    get(target, name) {
      if (Object.hasOwn(hooks, name)) return hooks[name as keyof Session];
      const value = Reflect.get(target, name) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
