import { lastValueFrom } from 'rxjs';
import { ConfigurationError, ResumeError } from '../errors.js';
import type { Item } from '../items.js';
import { toLastValue } from '../last-value.js';
import { checkId } from '../session/checks.js';
import type { JournalTurn, RunJournal } from '../session/session.js';
import { hasJournal } from './journal.js';
import { startRun } from './start.js';
import type { Agent, RunHandle, StartOptions } from './types.js';

/**
 * Continues the run `runId` from its last journalled turn (docs/sessions.md, "Durable runs"), for a
 * process that restarted after the one running it died: `options` as for `start()`, with the run's own
 * `session` (it must keep a journal), and its `mailbox` when steering survives the restart. Resolves with
 * the handle of the run, hot as `start()`'s, with the same `runId`: its events are `run_started`, then
 * `run_resumed` (`fromTurn`: the last journalled turn), then turn `fromTurn + 1`'s. The turns after
 * `fromTurn` that the dead process had begun are done again (a tool call in them may run again). Its
 * input is the run's journalled Items; at its end it commits them with its own, once, under `runId` (the
 * commit seals the journal), or discards the journal when it is cancelled or fails once it held the
 * session's lease, like any run. Refused before that (the lease of a run still live, or of the winner of
 * two continues racing; its session in use in this process) it fails `configuration_error` and leaves
 * the journal as it is.
 * Steering that a journalled turn injected (a `user` Item with its token's id) and that `options.mailbox`
 * still holds is taken off it and marked delivered, so it is not delivered again; the rest is delivered as
 * usual. Its usage counts from the continue (the dead process's is not journalled).
 *
 * Rejects with `ConfigurationError` for a bad `runId` (field `runId`) or a session without a journal (field
 * `options.session`), with {@link ResumeError} `committed` when the run's commit is stored (it completed;
 * nothing to continue) and `not_journalled` when it has no journalled turn (it never completed one, or was
 * cancelled or failed and discarded it: start it again from its input), `tampered` when a turn is missing
 * between journalled ones (turns 1 and 3: a row removed or put there), and with the store's error when
 * the journal cannot be read (`SessionSchemaError` `corrupt` for a row the store cannot read, naming the
 * run and the turn: `discardJournal` removes it). Nothing runs then.
 *
 * One process continues a run: take care that the process that ran it is gone (its session lease,
 * when the session has `acquire`, refuses a second live run anyway).
 *
 * @example
 * const handle = await resumeRun(agent, savedRunId, { session: store.session('project-a') });
 * const { output } = await handle.result;
 */
export async function resumeRun<C = unknown, O = unknown>(
  agent: Agent<C, O>,
  runId: string,
  options: StartOptions<C> = {},
): Promise<RunHandle<O>> {
  checkId(runId, 'runId');
  const session = (options as { session?: StartOptions<C>['session'] } | null)?.session;
  if (!hasJournal(session)) {
    const rule = 'must be a session that keeps a run journal (journalTurn, readJournal and discardJournal)';
    throw new ConfigurationError('options.session', rule);
  }
  const journal = await lastValueFrom(toLastValue(session.readJournal(runId)));
  const { turns, fromTurn } = continuable(runId, journal);
  const completed: Item[] = turns.flatMap((t) => t.items);
  // The next turn's response, journalled before its tools ran: the run goes on from its tool calls.
  const pending = journal?.pending?.turn === fromTurn + 1 ? journal.pending.items : undefined;
  const items = pending === undefined ? completed : [...completed, ...pending];
  const { mailbox } = options;
  if (mailbox !== undefined) {
    // Steering a journalled turn injected is delivered: the user Items carry its tokens' ids.
    const injected = new Set(items.filter((i) => i.type === 'user').map((i) => i.id));
    mailbox.markDelivered(mailbox.takeById(injected));
  }
  const continued = { runId, fromTurn, journalled: completed.length, ...(pending ? { pending: true } : {}) };
  return startRun(agent, items, options, { continued });
}

/**
 * The journal's turns 1…N and N; or the refusal. A turn after a gap (turns 1 and 3, no 2: a run journals its turns
 * in order, so a row was removed or put there) is `tampered`: continuing from turn 1 would drop turn 3 unseen.
 */
function continuable(runId: string, journal: RunJournal | undefined): { turns: JournalTurn[]; fromTurn: number } {
  if (journal?.sealed === true) {
    throw new ResumeError('committed', `run ${runId} completed and committed: there is nothing to continue`);
  }
  const turns: JournalTurn[] = [];
  for (const turn of journal?.turns ?? []) {
    if (turn.turn !== turns.length + 1) {
      if (turns.length === 0) break; // no turn 1: nothing to continue from (below)
      const gap = `turn ${turn.turn} after turn ${turns.length} (turn ${turns.length + 1} is missing)`;
      const why = 'it cannot be continued as it is; discardJournal removes it';
      throw new ResumeError('tampered', `run ${runId}'s journal has ${gap}: ${why}`);
    }
    turns.push(turn);
  }
  // A run whose first turn's response was journalled (`journalResponse`) goes on from its tool calls.
  if (turns.length === 0 && journal?.pending?.turn === 1) return { turns, fromTurn: 0 };
  if (turns.length === 0) {
    const why = 'it completed no turn, or it was cancelled or failed; start it again from its input';
    throw new ResumeError('not_journalled', `run ${runId} has no journalled turn: ${why}`);
  }
  return { turns, fromTurn: turns.length };
}
