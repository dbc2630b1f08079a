import { memo, useEffect, useRef } from 'react';
import { MarkdownView } from './markdown-view.js';
import type { Entry } from './state.js';
import type { ChatStore } from './store.js';
import { ToolCard } from './tool-card.js';
import { outcomeWords } from './wording.js';

/** The conversation in order: messages, tool call cards, notes and each run's outcome. */
export function Transcript({ entries, store }: { entries: readonly Entry[]; store: ChatStore }) {
  const end = useRef<HTMLLIElement>(null);
  // Braces: scrollIntoView returns a Promise in recent browsers, and an effect may return only a cleanup.
  useEffect(() => {
    void end.current?.scrollIntoView({ block: 'end' });
  }, [entries]);
  return (
    <ol className="transcript" role="log" aria-label="Conversation">
      {entries.map((entry) => (
        <EntryView key={`${entry.kind}:${entry.id}`} entry={entry} store={store} />
      ))}
      <li ref={end} className="end" aria-hidden="true" />
    </ol>
  );
}

const EntryView = memo(function EntryView({ entry, store }: { entry: Entry; store: ChatStore }) {
  switch (entry.kind) {
    case 'user':
      return (
        <li className="entry user" data-entry="user">
          <span className="who">{entry.steering ? 'You (steering)' : 'You'}</span>
          <p className="text">{entry.text}</p>
        </li>
      );
    case 'answer':
      return (
        <li className="entry answer" data-entry="answer" aria-busy={entry.open}>
          <span className="who">loopctl</span>
          <div className="text">
            <MarkdownView text={entry.text} />
          </div>
        </li>
      );
    case 'tool':
      return <ToolCard call={entry} store={store} />;
    case 'note':
      return (
        <li className="entry note" data-entry="note">
          {entry.text}
        </li>
      );
    case 'outcome': {
      const words = outcomeWords(entry);
      return (
        <li className={`entry outcome ${entry.outcome}`} data-entry="outcome" data-outcome={entry.outcome}>
          <strong className="headline">{words.headline}</strong>
          {words.detail !== undefined && <span className="detail"> {words.detail}</span>}
        </li>
      );
    }
  }
});
