import { useObservableEagerState } from 'observable-hooks';
import { useEffect } from 'react';
import type { ServerInfo } from './api.js';
import { Composer } from './composer.js';
import { RunControls } from './run-controls.js';
import { SteeringList } from './steering-list.js';
import type { ChatStore } from './store.js';
import { Transcript } from './transcript.js';

/**
 * The page: the conversation, the run's controls while it works (Stop, Stop after this step), the steering
 * messages with their state, the status line, and one text box that sends a message, or steers the run while
 * one works. Renders the store's state; a reload resumes the saved run.
 */
export function App({ store, info }: { store: ChatStore; info: ServerInfo | undefined }) {
  const state = useObservableEagerState(store.state$);
  useEffect(() => {
    store.resume();
  }, [store]);
  const run = state.run;
  return (
    <div className="app">
      <header className="top">
        <h1>loopctl</h1>
        <p className="meta">
          {info ? `${info.model} · folder ${info.folder} · tools: ${info.tools.join(', ')}` : 'loopctl serve'}
        </p>
        <button type="button" onClick={() => store.newChat()} disabled={run !== undefined}>
          New chat
        </button>
      </header>
      <main>
        <Transcript entries={state.entries} store={store} />
      </main>
      <footer className="bottom">
        <p className="notice" role="status" aria-live="polite">
          {state.notice}
        </p>
        {run && <RunControls run={run} store={store} />}
        {state.steering.length > 0 && <SteeringList steering={state.steering} store={store} live={run !== undefined} />}
        <Composer store={store} live={run !== undefined} ready={run === undefined || run.runId !== undefined} />
      </footer>
    </div>
  );
}
