import { useObservableEagerState } from 'observable-hooks';
import type { AskSetting } from './ask-setting.js';

/**
 * The header's switch "Ask before writes and shell commands": on, the next runs' write_file and run_shell
 * calls wait for Approve/Reject in the page. Under `serve --confirm` it is on and cannot be turned off.
 */
export function AskToggle({ ask }: { ask: AskSetting }) {
  const on = useObservableEagerState(ask.on$);
  const title = ask.locked
    ? 'loopctl serve --confirm: every write and shell command asks first'
    : 'Each write and shell command of the next runs waits for your Approve or Reject';
  return (
    <label className="ask-toggle" title={title}>
      <input
        type="checkbox"
        role="switch"
        aria-label="Ask before writes and shell commands"
        checked={on}
        disabled={ask.locked}
        onChange={(event) => ask.set(event.currentTarget.checked)}
      />
      <span className="ask-long" aria-hidden="true">
        Ask before writes and shell commands
      </span>
      <span className="ask-short" aria-hidden="true">
        Ask first
      </span>
    </label>
  );
}
