import { memo, useId, useState } from 'react';
import type { ToolEntry } from './state.js';
import type { ChatStore } from './store.js';
import { argsLine, argsText, durationWords, TOOL_STATUS_WORDS } from './wording.js';

/**
 * A tool call at a glance: its name, its arguments on one line, its status in words and how long it took; the
 * arguments, progress and result folded below. Approve/Reject (with a reason) while it waits for approval.
 */
export const ToolCard = memo(function ToolCard({ call, store }: { call: ToolEntry; store: ChatStore }) {
  const state = call.approval === 'pending' ? 'awaiting' : call.status;
  const took = call.startedAt !== undefined && call.endedAt !== undefined ? call.endedAt - call.startedAt : undefined;
  return (
    <li className={`entry tool ${state}`} data-entry="tool" data-call-id={call.id} data-status={state}>
      <article aria-label={`Tool call ${call.name}`}>
        <header className="tool-head">
          <span className="tool-dot" aria-hidden="true" />
          <span className="tool-name">{call.name}</span>
          {call.path !== undefined && <span className="tool-via">in {call.path.join(' › ')}</span>}
          <span className="tool-line" title={call.args}>
            {argsLine(call.args)}
          </span>
          <span className="tool-status">{TOOL_STATUS_WORDS[state]}</span>
          {took !== undefined && <span className="tool-time">{durationWords(took)}</span>}
        </header>
        {call.progress !== undefined && call.result === undefined && call.status === 'running' && (
          <p className="tool-progress">Progress: {call.progress}</p>
        )}
        <details open={state === 'awaiting'}>
          <summary>Arguments</summary>
          <pre className="tool-args">{argsText(call.args)}</pre>
        </details>
        {call.result !== undefined && (
          <details open={call.status !== 'done'}>
            <summary>{call.status === 'done' ? 'Result' : 'Error'}</summary>
            <pre className="tool-result">{call.result}</pre>
          </details>
        )}
        {call.approval === 'pending' && <Approval call={call} store={store} />}
        {call.approval === 'approved' && <p className="tool-decision">You approved it.</p>}
        {call.approval === 'rejected' && <p className="tool-decision">You rejected it.</p>}
        {call.approval === 'closed' && <p className="tool-decision">This call no longer waits for a decision.</p>}
      </article>
    </li>
  );
});

function Approval({ call, store }: { call: ToolEntry; store: ChatStore }) {
  const [reason, setReason] = useState('');
  const id = useId();
  return (
    <div className="approval" role="group" aria-label={`Approve or reject ${call.name}`}>
      <p className="approval-ask">loopctl wants to run this. Allow it?</p>
      <button type="button" className="primary" onClick={() => void store.decide(call.id, true)}>
        Approve
      </button>
      <label htmlFor={id} className="visually-hidden">
        Reason
      </label>
      <input id={id} value={reason} placeholder="Reason (optional)" onChange={(e) => setReason(e.target.value)} />
      <button type="button" onClick={() => void store.decide(call.id, false, reason.trim() || undefined)}>
        Reject
      </button>
    </div>
  );
}
