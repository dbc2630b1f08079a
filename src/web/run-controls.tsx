import type { LiveRun } from './state.js';
import type { ChatStore } from './store.js';

/** While a run works: what it is doing, Stop (cancel now) and Stop after this step (a graceful stop). */
export function RunControls({ run, store }: { run: LiveRun; store: ChatStore }) {
  const known = run.runId !== undefined;
  const doing = run.stopping ? 'stopping…' : run.stopRequested ? 'finishing this step…' : (run.step ?? 'starting…');
  return (
    <div className="run-controls" role="group" aria-label="Run controls">
      <span className="run-state" aria-live="polite">
        Working: {doing}
      </span>
      <button type="button" className="stop" onClick={() => void store.stop()} disabled={!known || run.stopping}>
        Stop
      </button>
      <button
        type="button"
        onClick={() => void store.stopAfterStep()}
        disabled={!known || run.stopping || run.stopRequested}
      >
        Stop after this step
      </button>
    </div>
  );
}
