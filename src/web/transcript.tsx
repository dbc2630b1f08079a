import { memo, useEffect, useRef } from 'react';
import type { Entry, OutcomeEntry } from './state.js';
import type { ChatStore } from './store.js';
import { ToolCard } from './tool-card.js';

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
          <p className="text">{entry.text}</p>
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
    case 'outcome':
      return (
        <li className={`entry outcome ${entry.outcome}`} data-entry="outcome" data-outcome={entry.outcome}>
          {outcomeText(entry)}
        </li>
      );
  }
});

/** "cancelled · phase model_stream · reason: stopped by the user", "failed (max_turns): …", "completed". */
export function outcomeText(o: OutcomeEntry): string {
  const parts: string[] = [o.outcome];
  if (o.code) parts[0] = `${o.outcome} (${o.code})`;
  if (o.phase) parts.push(`phase ${o.phase}`);
  if (o.reason) parts.push(`reason: ${o.reason}`);
  return parts.join(' · ');
}
