import { realpathSync } from 'node:fs';
import { isConcurrentRunError, type SessionInfo } from '../../index.js';
import { isInstance } from '../../describe.js';
import { folder as workingFolder, UsageError, type CliCommand } from '../args.js';
import { isYes } from '../confirm.js';
import { LineInput } from '../line-input.js';
import type { CliIO } from '../run-agent.js';
import { sanitizeLine } from '../sanitize.js';
import { folderKey, sessionId, splitId } from '../store/names.js';
import { storeLocation } from '../store/location.js';
import { openStore, StoreError, storeError, type CliStore } from '../store/open-store.js';
import { listTable, localTime, safeJsonLine, transcript, type ListedConversation } from './transcript.js';

type Subcommand = Extract<CliCommand, { kind: 'subcommand' }>;

/** The actions of `loopctl sessions` and the options each takes (besides `--cwd`). */
const ACTIONS: Readonly<Record<string, readonly string[]>> = { list: ['all', 'json'], show: ['json'], rm: ['yes'] };

/**
 * `loopctl sessions [list|show|rm]` (docs/cli.md "Saved conversations"):
 * - `list [--all] [--json]`: the working folder's conversations (every folder's with `--all`), newest first;
 * - `show [NAME] [--json]`: a conversation (default: the folder's last) through the CLI's sanitiser;
 * - `rm NAME… [--yes]`: deletes conversations, after asking on a terminal; without one `--yes` is required.
 * NAME is a name in the working folder (`--cwd`), or a whole id as `list --all --json` gives it (`folder#name`).
 * Resolves with the exit code: 0 done, 1 a conversation not found or in use, or the store cannot be used
 * (nothing is deleted then), 2 bad options (an unknown action, an option it does not take, `rm` without
 * a name, or without `--yes` when stdin is not a terminal), 130 Ctrl-C at the question.
 * @throws UsageError (exit 2) for the bad options above.
 */
export async function runSessions(command: Subcommand, env: NodeJS.ProcessEnv, io: CliIO): Promise<number> {
  const [action = 'list', ...names] = command.args;
  const allowed = ACTIONS[action];
  if (!allowed) {
    throw new UsageError(`unknown sessions action ${JSON.stringify(action)}: the actions are list, show and rm`);
  }
  for (const [option, value] of Object.entries(command.values)) {
    if (value !== undefined && option !== 'cwd' && option !== 'store' && !allowed.includes(option))
      throw new UsageError(`option --${option} does not apply to loopctl sessions ${action}`);
  }
  if (action === 'list' && names.length > 0) throw new UsageError('loopctl sessions list takes no name');
  if (action === 'show' && names.length > 1) throw new UsageError('loopctl sessions show takes one name at most');
  if (action === 'rm' && names.length === 0)
    throw new UsageError('loopctl sessions rm needs the name of a conversation (loopctl sessions list shows them)');
  const interactive = (io.stdin ?? process.stdin).isTTY === true;
  if (action === 'rm' && !command.values['yes'] && !interactive)
    throw new UsageError('sessions rm: stdin is not a terminal to ask on; add --yes to delete without asking');
  const cwd = workingFolder(command.values['cwd'] as string | undefined, env);
  const folder = folderKey(realpathSync(cwd));

  const location = storeLocation(command.values['store'] as string | undefined, env);
  const opened = await openStore(env, false, location);
  if (opened === undefined) {
    const hint = location.kind === 'postgres' ? `schema ${location.schema} of ${location.shown}` : dataFileHint(env);
    io.stderr.write(`[loopctl] no saved conversations (none was ever saved in ${sanitizeLine(hint)})\n`);
    return action === 'list' ? 0 : 1;
  }
  if (opened.kind === 'unavailable') {
    throw new StoreError(`the saved conversations cannot be read: better-sqlite3 cannot be loaded (${opened.cause})`);
  }
  const { store, where } = opened;
  try {
    const sessions = new Sessions(store, folder, await store.list());
    const flag = (name: string) => command.values[name] === true;
    if (action === 'list') return sessions.list(io, flag('all'), flag('json'), where);
    if (action === 'show') return await sessions.show(io, names[0], flag('json'));
    return await sessions.rm(io, names, flag('yes'));
  } catch (error) {
    throw isInstance(error, StoreError) || isInstance(error, UsageError) ? error : storeError(error, where);
  } finally {
    await store.close();
  }
}

/** Where the saved conversations would be, for a message (the data folder may be unreadable: described, not thrown). */
function dataFileHint(env: NodeJS.ProcessEnv): string {
  return env['LOOPCTL_DATA_DIR'] || '$XDG_DATA_HOME/loopctl or ~/.local/share/loopctl';
}

/** The actions on one store, for the conversations of `folder`. */
class Sessions {
  constructor(
    private readonly store: CliStore,
    private readonly folder: string,
    private readonly all: readonly SessionInfo[],
  ) {}

  /** The stored conversation NAME means (a name in the folder, or a whole `folder#name` id), or undefined. */
  find(name: string): ListedConversation | undefined {
    const id = name.includes('#') ? name : sessionId(this.folder, name);
    const info = this.all.find((s) => s.id === id);
    if (info === undefined) return undefined;
    const split = splitId(info.id);
    return { name: split?.name ?? info.id, folder: split?.folder ?? '', info };
  }

  list(io: CliIO, all: boolean, json: boolean, where: string): number {
    const rows = this.all.flatMap((info): ListedConversation[] => {
      const split = splitId(info.id);
      if (!all && split?.folder !== this.folder) return [];
      return [{ name: split?.name ?? info.id, folder: split?.folder ?? '', info }];
    });
    io.stderr.write(`[loopctl] saved conversations in ${sanitizeLine(where)}\n`);
    if (rows.length === 0) {
      const where = all ? '' : ` for ${sanitizeLine(this.folder)} (--all lists every folder's)`;
      io.stderr.write(`[loopctl] no saved conversations${where}\n`);
      return 0;
    }
    if (json) {
      for (const { name, folder, info } of rows) io.stdout.write(safeJsonLine({ name, folder, ...info }));
    } else io.stdout.write(listTable(rows, all));
    return 0;
  }

  async show(io: CliIO, name: string | undefined, json: boolean): Promise<number> {
    const found = name === undefined ? this.latest() : this.find(name);
    if (found === undefined) return this.missing(io, name);
    const items = await this.store.session(found.info.id).load();
    const when = localTime(found.info.updatedAt);
    const where = sanitizeLine(found.folder || found.info.id);
    io.stderr.write(
      `[loopctl] conversation ${sanitizeLine(found.name)} · ${items.length} items · updated ${when}` +
        ` · folder ${where}\n`,
    );
    if (json) for (const item of items) io.stdout.write(safeJsonLine(item));
    else io.stdout.write(transcript(items));
    return 0;
  }

  async rm(io: CliIO, names: readonly string[], yes: boolean): Promise<number> {
    const found = names.map((name) => this.find(name));
    const missing = names.filter((_, i) => found[i] === undefined);
    if (missing.length > 0) return this.missing(io, missing[0]!, ' nothing was deleted');
    const targets = [...new Map(found.map((f) => [f!.info.id, f!])).values()];
    if (!yes) {
      const what = targets.map((t) => `${sanitizeLine(t.name)} (${t.info.items} items)`).join(', ');
      const answer = await ask(io, `delete ${targets.length === 1 ? 'conversation' : 'conversations'} ${what}? [y/N] `);
      if (answer === 'interrupted') return 130;
      if (!isYes(answer)) {
        io.stderr.write('[loopctl] nothing was deleted\n');
        return 0;
      }
    }
    for (const target of targets) {
      try {
        await this.store.delete(target.info.id);
      } catch (error) {
        if (!isConcurrentRunError(error)) throw error;
        io.stderr.write(
          `loopctl: conversation ${sanitizeLine(target.name)} is in use by a running loopctl; ` +
            'it was not deleted\n',
        );
        return 1;
      }
      io.stderr.write(`[loopctl] deleted conversation ${sanitizeLine(target.name)} (${target.info.items} items)\n`);
    }
    return 0;
  }

  /** The folder's most recently updated conversation. */
  latest(): ListedConversation | undefined {
    const info = this.all.find((s) => splitId(s.id)?.folder === this.folder);
    return info === undefined ? undefined : this.find(splitId(info.id)!.name);
  }

  missing(io: CliIO, name: string | undefined, more = ''): number {
    const what = name === undefined ? 'no saved conversation' : `no conversation ${JSON.stringify(name)}`;
    io.stderr.write(
      `loopctl: ${sanitizeLine(`${what} in ${this.folder}`)} (loopctl sessions list shows them)` +
        `${more ? `;${more}` : ''}\n`,
    );
    return 1;
  }
}

/** Asks `question` on the terminal: resolves with the answer, undefined at the end of input, or 'interrupted'. */
async function ask(io: CliIO, question: string): Promise<string | undefined | 'interrupted'> {
  const input = new LineInput({ input: io.stdin ?? process.stdin, log: io.stderr });
  let interrupted = false;
  input.onInterrupt = () => {
    interrupted = true;
    input.cancelAsk();
  };
  try {
    const answer = await input.ask(question);
    if (interrupted) io.stderr.write('[loopctl] nothing was deleted\n');
    return interrupted ? 'interrupted' : answer;
  } finally {
    input.close();
  }
}
