import { runActivity, type Entry, type LiveRun } from './state.js';
import type { ChatStore } from './store.js';
import { statusWords } from './wording.js';

/**
 * While a run works: what it is doing in words ("Waiting for a worker…", "Thinking…", "Running read_file…",
 * "Waiting for your approval"), Stop (cancel now; Esc does the same; a run waiting for a worker ends at once)
 * and Stop after this step (a graceful stop; not for a run no worker has taken).
 */
export function RunControls({
  run,
  entries,
  store,
  queue,
}: {
  run: LiveRun;
  entries: readonly Entry[];
  store: ChatStore;
  queue?: { readonly workers: number; readonly start: string } | undefined;
}) {
  const known = run.runId !== undefined;
  return (
    <div className="run-controls" role="group" aria-label="Run controls">
      <span className="run-state" aria-live="polite">
        <span className="spinner" aria-hidden="true" />
        {statusWords(runActivity(run, entries))}
      </span>
      <button
        type="button"
        onClick={() => void store.stopAfterStep()}
        disabled={!known || run.stopping || run.stopRequested || run.waiting}
      >
        Stop after this step
      </button>
      <button
        type="button"
        className="stop"
        onClick={() => void store.stop()}
        disabled={!known || run.stopping}
        aria-keyshortcuts="Escape"
      >
        Stop
      </button>
      {run.waiting && queue?.workers === 0 && (
        <p className="run-hint">
          No worker is taking runs from this queue: start one with <code>{queue.start}</code>
        </p>
      )}
    </div>
  );
}
