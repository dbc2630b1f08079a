import type { WorkerRunNote } from '../../bullmq/worker.js';
import { cancelReasonWords, stopReasonWords } from '../../wording.js';

/**
 * The line `loopctl worker` prints for a run it claimed or ended, in words: `run <id>: claimed (agent cli)`,
 * `run <id>: ended, Done.`, `run <id>: ended, Stopped. You pressed Stop.`
 */
export function runLine(note: WorkerRunNote): string {
  if (note.type === 'claimed') return `run ${note.runId}: claimed (agent ${note.agent})`;
  if (note.terminal !== 'run_cancelled') return `run ${note.runId}: ended, ${stopReasonWords(note.stopReason)}`;
  const reason = note.reason === undefined || typeof note.reason === 'string' ? note.reason : jsonText(note.reason);
  return `run ${note.runId}: ended, ${stopReasonWords(note.stopReason)} ${cancelReasonWords(reason)}.`;
}

function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
