import { useState, type FormEvent, type KeyboardEvent } from 'react';
import type { ChatStore } from './store.js';

/**
 * One text box: with no run, Send starts one; while a run works, Steer pushes the text into its mailbox (it
 * lands at the next turn). Enter sends, Shift+Enter adds a line.
 */
export function Composer({ store, live, ready }: { store: ChatStore; live: boolean; ready: boolean }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const trimmed = text.trim();

  async function submit(event?: FormEvent): Promise<void> {
    event?.preventDefault();
    if (trimmed === '' || !ready || busy) return;
    if (!live) {
      store.send(trimmed);
      setText('');
      return;
    }
    setBusy(true);
    const queued = await store.steer(trimmed);
    setBusy(false);
    if (queued) setText('');
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>): void {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void submit();
    }
  }

  return (
    <form className="composer" onSubmit={(e) => void submit(e)}>
      <label htmlFor="composer-text">{live ? 'Steer the run' : 'Message'}</label>
      <textarea
        id="composer-text"
        rows={2}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
        aria-describedby="composer-hint"
        placeholder={live ? 'e.g. also check the tests' : 'Ask loopctl about the files of its folder'}
      />
      <button type="submit" disabled={trimmed === '' || !ready || busy}>
        {live ? 'Steer' : 'Send'}
      </button>
      <p id="composer-hint" className="hint">
        Enter sends, Shift+Enter adds a line. While a run works, what you send steers it at its next turn.
      </p>
    </form>
  );
}
