/** What the parts of `runsContract` share: its options, a fresh `Runs` per test, and readers of a run's events. */
import { filter, firstValueFrom, lastValueFrom, timeout, toArray, type Observable } from 'rxjs';
import { isTerminalEvent, type RunEvent, type TerminalEvent } from '../../events.js';
import { isCompactTextDelta } from '../../runs/compact.js';
import type { IfBusy, Runs } from '../../runs/types.js';
import type { ContractFramework } from './kit.js';
import { RUNS_CONTRACT_AGENT, type RunsContractDirective } from './runs-agent.js';

/** A `Runs` under test, closed at the end of each test when it has `close()`. */
export type RunsUnderTest = Runs & { close?(): unknown };

/** A fresh `Runs` per test, serving `runsContractAgent()`. */
export type MakeRuns = () => RunsUnderTest | Promise<RunsUnderTest>;

/**
 * Options of `runsContract`.
 * - `retention`: the implementation's `retainFinishedMs` as configured for the test, and `advance(ms)`, which
 *   passes that much time for it (a virtual clock's step, or a real wait); `slackMs` (default 0) is how late
 *   after its time an ended run may still be kept (a store's expiry latency).
 * - `ifBusy`: the strategies the implementation serves (the others must reject with `NotSupportedError`).
 *   Default `['steer', 'reject']`, the ones every implementation serves.
 * - `suspending`: a `Runs` whose runs suspend for approval (run option `approvals: 'suspend'`); without it
 *   the suspended runs' part is marked not applicable.
 * - `lose`: makes the process that runs `runId` die (a queue worker SIGKILLed); the run must then end
 *   `run_failed` with `stopReason: 'worker_lost'`. Without it the lost runs' part is marked not applicable
 *   (right for an implementation whose runs live in the caller's process).
 * - `eventsTimeoutMs`: how long a read of a run's events may take before the suite says it never completed.
 *   Default 10 000.
 */
export interface RunsContractOptions {
  readonly retention: {
    readonly retainFinishedMs: number;
    advance(ms: number): unknown;
    readonly slackMs?: number;
  };
  readonly ifBusy?: readonly IfBusy[];
  readonly suspending?: MakeRuns;
  readonly lose?: (runId: string) => unknown;
  readonly eventsTimeoutMs?: number;
}

/** What each part gets. */
export interface RunsParts {
  readonly framework: ContractFramework;
  readonly options: RunsContractOptions;
  /** Runs `body` with a fresh `Runs` from `make` and a principal of the test's own; closes it after. */
  withRuns(body: (t: RunsTest) => Promise<void>, make?: MakeRuns): Promise<void>;
}

/** One test's `Runs`, principal and helpers. */
export interface RunsTest {
  readonly runs: RunsUnderTest;
  readonly principal: string;
  /** Starts a run of the contract agent with `directive` on a thread of its own (or `threadId`). */
  start(directive: RunsContractDirective, threadId?: string): Promise<string>;
  /** Every event of the run after `afterSeq`, up to its terminal; fails if the read does not complete in time. */
  read(runId: string, afterSeq?: number): Promise<RunEvent[]>;
  /** The first event of `type` (waits for it). */
  first<T extends RunEvent['type']>(runId: string, type: T): Promise<Extract<RunEvent, { type: T }>>;
  /** The run's terminal event (waits for it). */
  terminal(runId: string): Promise<TerminalEvent>;
}

let counter = 0;

export function runsParts(framework: ContractFramework, makeRuns: MakeRuns, options: RunsContractOptions): RunsParts {
  const limit = options.eventsTimeoutMs ?? 10_000;
  const bounded = <T>(events: Observable<T>, what: string): Observable<T> =>
    events.pipe(
      timeout({
        first: limit,
        each: limit,
        with: () => {
          throw new Error(`${what}: no event and no completion within ${limit} ms`);
        },
      }),
    );
  return {
    framework,
    options,
    async withRuns(body, make = makeRuns) {
      const runs = await make();
      const principal = `contract-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
      let threads = 0;
      const t: RunsTest = {
        runs,
        principal,
        async start(directive, threadId = `thread-${++threads}`) {
          const started = await runs.start({ agent: RUNS_CONTRACT_AGENT, threadId, input: directive, principal });
          return started.runId;
        },
        read: (runId, afterSeq) =>
          lastValueFrom(
            bounded(runs.events(runId, { principal, afterSeq }), `events(afterSeq ${afterSeq})`).pipe(toArray()),
          ),
        first: (runId, type) =>
          firstValueFrom(
            bounded(runs.events(runId, { principal }), `waiting for ${type}`).pipe(
              filter((e): e is Extract<RunEvent, { type: typeof type }> => e.type === type),
            ),
          ),
        terminal: (runId) =>
          firstValueFrom(
            bounded(runs.events(runId, { principal }), 'waiting for the terminal').pipe(filter(isTerminalEvent)),
          ),
      };
      try {
        await body(t);
      } finally {
        await runs.close?.();
      }
    },
  };
}

/** The seqs events stand for, each once: a compacted `text_delta` stands for `fromSeq … seq`. */
export function seqsOf(events: readonly RunEvent[]): number[] {
  return events.flatMap((e) => {
    const from = isCompactTextDelta(e) ? e.fromSeq : e.seq;
    return Array.from({ length: e.seq - from + 1 }, (_, i) => from + i);
  });
}

/** The text of each seq's delta (a compacted delta split back into its deltas), as `[seq, text]` pairs. */
export function deltasOf(events: readonly RunEvent[]): [number, string][] {
  return events.flatMap((e): [number, string][] => {
    if (e.type !== 'text_delta') return [];
    if (!isCompactTextDelta(e)) return [[e.seq, e.delta]];
    return e.offsets.map((o, i): [number, string] => [e.fromSeq + i, e.delta.slice(o, e.offsets[i + 1])]);
  });
}

/** The error `promise` rejects with (`name`, `field`); `undefined` fields left out, for one exact comparison. */
export async function refusal(promise: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    const value = await promise;
    return { resolved: value };
  } catch (error) {
    const e = error as { name?: unknown; field?: unknown };
    return e.field === undefined ? { name: e.name } : { name: e.name, field: e.field };
  }
}
