import { memo, useId, useState } from 'react';
import type { ToolEntry } from './state.js';
import type { ChatStore } from './store.js';

const STATUS: Record<ToolEntry['status'], string> = { running: 'running', done: 'done', failed: 'failed' };

/** A tool call: its arguments, its last progress, its result or error, and Approve/Reject while asked. */
export const ToolCard = memo(function ToolCard({ call, store }: { call: ToolEntry; store: ChatStore }) {
  const status = call.approval === 'pending' ? 'waiting for approval' : STATUS[call.status];
  return (
    <li className={`entry tool ${call.status}`} data-entry="tool" data-call-id={call.id}>
      <article aria-label={`Tool call ${call.name}`}>
        <header>
          <span className="tool-name">{call.name}</span> <span className="tool-status">{status}</span>
        </header>
        <details open={call.result === undefined}>
          <summary>Arguments</summary>
          <pre className="tool-args">{pretty(call.args)}</pre>
        </details>
        {call.progress !== undefined && call.result === undefined && (
          <p className="tool-progress">Progress: {call.progress}</p>
        )}
        {call.result !== undefined && (
          <details open={call.status === 'failed'}>
            <summary>{call.status === 'failed' ? 'Error' : 'Result'}</summary>
            <pre className="tool-result">{call.result}</pre>
          </details>
        )}
        {call.approval === 'pending' && <Approval call={call} store={store} />}
        {call.approval === 'approved' && <p className="tool-decision">approved</p>}
        {call.approval === 'rejected' && <p className="tool-decision">rejected</p>}
      </article>
    </li>
  );
});

function Approval({ call, store }: { call: ToolEntry; store: ChatStore }) {
  const [reason, setReason] = useState('');
  const id = useId();
  return (
    <div className="approval" role="group" aria-label={`Approve or reject ${call.name}`}>
      <button type="button" onClick={() => void store.decide(call.id, true)}>
        Approve
      </button>
      <label htmlFor={id}>Reason</label>
      <input id={id} value={reason} placeholder="rejected by the user" onChange={(e) => setReason(e.target.value)} />
      <button type="button" onClick={() => void store.decide(call.id, false, reason.trim() || undefined)}>
        Reject
      </button>
    </div>
  );
}

/** Arguments as indented JSON when they are JSON, else as they came. */
function pretty(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}
