import { useObservableEagerState } from 'observable-hooks';
import { useEffect } from 'react';
import type { ServerInfo } from './api.js';
import { AskToggle } from './ask-toggle.js';
import type { AskSetting } from './ask-setting.js';
import { Composer } from './composer.js';
import { RunControls } from './run-controls.js';
import { SteeringList } from './steering-list.js';
import type { ChatStore } from './store.js';
import { Transcript } from './transcript.js';

/** What a first message could be (the offline model knows these shapes: docs/cli.md). */
const EXAMPLES = ['List the markdown files', 'How many lines are in README.md?', 'Find TODO in the files'];

/**
 * The page: the conversation, the run's controls while it works (Stop, Stop after this step), the steering
 * messages with their state, the status line, and one text box that sends a message, or steers the run while
 * one works. Esc stops the live run. The header holds the setting "Ask before writes and shell commands" when
 * the server offers it. Renders the store's state; a reload resumes the saved run.
 */
export function App({ store, info, ask }: { store: ChatStore; info: ServerInfo | undefined; ask?: AskSetting }) {
  const state = useObservableEagerState(store.state$);
  useEffect(() => {
    store.resume();
  }, [store]);
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape' && !event.isComposing && store.state.run?.runId !== undefined) {
        event.preventDefault();
        void store.stop();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [store]);
  const run = state.run;
  return (
    <div className="app">
      <header className="top">
        <h1>loopctl</h1>
        <p className="meta">
          {info ? (
            <>
              <span>{info.model}</span> <span title={info.folder}>{info.folder}</span>
            </>
          ) : (
            'loopctl serve'
          )}
        </p>
        {ask?.offered && <AskToggle ask={ask} />}
        <button type="button" onClick={() => store.newChat()} disabled={run !== undefined}>
          New chat
        </button>
      </header>
      <main>
        {state.entries.length === 0 ? (
          <section className="empty" aria-label="Start">
            <h2>What should loopctl do?</h2>
            <p>
              It works on the files of {info ? <code>{info.folder}</code> : 'its folder'}
              {info && info.tools.length > 0 ? ` with ${info.tools.join(', ')}` : ''}. Ask in the box below, or start
              with:
            </p>
            <ul>
              {EXAMPLES.map((text) => (
                <li key={text}>
                  <button type="button" className="example" onClick={() => store.send(text)}>
                    {text}
                  </button>
                </li>
              ))}
            </ul>
          </section>
        ) : (
          <Transcript entries={state.entries} store={store} />
        )}
      </main>
      <footer className="bottom">
        <p className="notice" role="status" aria-live="polite">
          {state.unavailable ?? state.notice}
        </p>
        {run && <RunControls run={run} entries={state.entries} store={store} queue={state.queue} />}
        {state.steering.length > 0 && <SteeringList steering={state.steering} store={store} live={run !== undefined} />}
        <Composer store={store} live={run !== undefined} ready={run === undefined || run.runId !== undefined} />
      </footer>
    </div>
  );
}
