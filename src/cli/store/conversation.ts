import { randomUUID } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { lastValueFrom } from 'rxjs';
import { toLastValue } from '../../last-value.js';
import {
  isConcurrentRunError,
  isSessionStorageError,
  MemorySession,
  type Lease,
  type Session,
  type SessionStore,
} from '../../index.js';
import type { CliOptions } from '../args.js';
import { sanitizeLine } from '../sanitize.js';
import { folderKey, newName, sessionId, splitId } from './names.js';
import { openStore, StoreError, storeError } from './open-store.js';

/** How long (ms) a CLI run's lease on its conversation lasts unless renewed; it is renewed every third of it. */
export const LEASE_TTL_MS = 30_000;

/** Another loopctl is running on the conversation ("one run per mailbox and session", across processes). */
export class ConversationBusyError extends Error {
  override readonly name = 'ConversationBusyError';
}

/**
 * The conversation the CLI's runs share: one for a one-shot run, for every
 * piped task, and for the whole prompt loop. Only completed runs commit to
 * it (guarantee 6: scratchpad: only a completed run commits), so a
 * cancelled run leaves it as it was.
 */
export interface Conversation {
  /** What runs load and commit to. It has no `acquire`: {@link hold} takes the lease around each run. */
  readonly session: Session;
  /** One line for the header: which conversation, and whether it is new, continued or not saved. */
  readonly note: string;
  /** True when completed runs are saved in the store; false when the conversation lives in memory only. */
  readonly saved: boolean;
  /**
   * The run on this conversation whose process stopped before it ended (a `kill -9`), found when it is
   * continued: its journal holds its completed turns, so it is continued first (docs/cli.md).
   */
  readonly unfinishedRun?: string;
  /**
   * For a conversation this command creates: what to say when its run does not complete (nothing is
   * stored, so the conversation the header named does not exist and `--continue` will not find it).
   */
  readonly notCreated?: string;
  /**
   * Runs `body` holding the conversation's lease, renewed every
   * `LEASE_TTL_MS / 3`, released when `body` settles. Should the lease be
   * lost meanwhile (another process took it after this one stalled for a
   * whole ttl), `onLost` is called so the run can be cancelled: it must not
   * commit. A store that cannot write the lease (a read-only or full disk)
   * runs `body` without one; the run's commit then fails with the cause. While another process holds
   * the store's write lock, taking the lease waits (without blocking the event loop); `signal` aborting
   * then (Ctrl-C) ends the wait: `body` runs at once, without the lease (its run was cancelled: it
   * commits nothing), and a lease the abandoned wait still gets is released as soon as it has it.
   * @throws ConversationBusyError, before `body`, while another loopctl runs on it.
   */
  hold<T>(onLost: (reason: string) => void, body: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Closes the store (idempotent). */
  close(): Promise<void>;
}

/**
 * The conversation `options.conversation` asks for (see `ConversationChoice`
 * and docs/cli.md "Saved conversations"): in the CLI's session store, keyed
 * by the real path of `options.cwd`, in SQLite or in the Postgres of `options.store`; or in memory with
 * `--no-save`, or when better-sqlite3 cannot be loaded (the note says so and how to fix it).
 * @throws StoreError when the store cannot be used, when better-sqlite3
 *   cannot be loaded for `--continue` or `--session`, or for `--session NAME
 *   --new` when NAME exists; UsageError for a relative `LOOPCTL_DATA_DIR`.
 */
export async function openConversation(options: CliOptions, env: NodeJS.ProcessEnv): Promise<Conversation> {
  const choice = options.conversation;
  if (choice.kind === 'unsaved') return inMemory('conversation not saved (--no-save)');
  const opened = await openStore(env, true, options.store);
  if (opened?.kind !== 'store') {
    const cause = opened?.cause ?? 'no store';
    if (choice.kind !== 'new') {
      const flag = choice.kind === 'continue' ? '--continue' : '--session';
      throw new StoreError(`${flag} needs the saved conversations, but better-sqlite3 cannot be loaded: ${cause}`);
    }
    return inMemory(
      `conversations are not saved: better-sqlite3 cannot be loaded (${cause}); ` +
        'install better-sqlite3@12.11.1 to save them, or pass --no-save',
    );
  }
  const { store } = opened;
  // How a later command reaches this store: a bare flag would look in sessions.db instead of Postgres.
  const same = options.store.kind === 'postgres' ? ', with the same --store or LOOPCTL_DATABASE_URL' : '';
  try {
    const folder = folderKey(realpathSync(options.cwd));
    const mine = (await store.list()).filter((info) => splitId(info.id)?.folder === folder);
    const existing = (name: string) => mine.find((info) => info.id === sessionId(folder, name));
    let name: string;
    let note: string;
    let fresh = true;
    if (choice.kind === 'named') {
      name = choice.name;
      const found = existing(name);
      if (found && choice.fresh) {
        throw new StoreError(
          `conversation "${name}" exists in this folder already: drop --new to continue it, ` +
            `or delete it with loopctl sessions rm ${name}`,
        );
      }
      fresh = found === undefined;
      note = found ? `continued: ${found.items} items` : `new; loopctl --session ${name} resumes it${same}`;
    } else if (choice.kind === 'continue' && mine.length > 0) {
      name = splitId(mine[0]!.id)!.name;
      fresh = false;
      note = `continued: ${mine[0]!.items} items`;
    } else {
      do name = newName();
      while (existing(name));
      const none = choice.kind === 'continue' ? 'this folder had no saved conversation to continue; ' : '';
      note = `new; ${none}loopctl --continue resumes it${same}`;
    }
    const session = store.session(sessionId(folder, name));
    // A conversation continued is read first, so the header counts what loads, and a history a row was removed
    // from (or whose count was changed) is refused here, naming the row, before anything runs.
    if (!fresh) note = `continued: ${(await session.load()).length} items`;
    // `--continue` with one task finishes the conversation's last run first when it was killed before it ended.
    const unfinished = choice.kind !== 'continue' || options.mode !== 'once' ? undefined : await unfinishedIn(session);
    const conversation = stored(store, session, `conversation ${sanitizeLine(name)} (${note})`, unfinished);
    if (!fresh) return conversation;
    const nothing = 'so nothing resumes it';
    const notCreated = `conversation ${sanitizeLine(name)} was not created: its run did not complete, ${nothing}`;
    return { ...conversation, notCreated };
  } catch (error) {
    await store.close();
    throw error instanceof StoreError ? error : storeError(error, opened.where);
  }
}

/** A conversation kept in memory: nothing to lease, nothing to close. */
function inMemory(note: string): Conversation {
  const hold: Conversation['hold'] = (_onLost, body) => body();
  return { session: new MemorySession(), note, saved: false, hold, close: async () => undefined };
}

/** The run of `session` journalled last, when a run's process stopped before it ended (none for a new one). */
async function unfinishedIn(session: Session): Promise<string | undefined> {
  if (typeof session.journalledRuns !== 'function') return undefined;
  const runs = await lastValueFrom(toLastValue(session.journalledRuns()));
  return runs?.at(-1);
}

function stored(store: SessionStore, session: Session, note: string, unfinishedRun?: string): Conversation {
  const s = session as Required<Session>;
  const journal =
    typeof session.journalTurn === 'function' && typeof session.readJournal === 'function'
      ? {
          // The run journal (docs/sessions.md, "Durable runs"): a killed run is continued from its last turn.
          journalTurn: s.journalTurn.bind(session),
          readJournal: s.readJournal.bind(session),
          discardJournal: s.discardJournal.bind(session),
          // A turn's response before its tools: a continue reuses it and runs no started call again.
          ...(session.journalResponse ? { journalResponse: s.journalResponse.bind(session) } : {}),
        }
      : {};
  return {
    // Without `acquire`: the lease is taken here, around each run, so the engine never takes a second one.
    session: {
      load: () => session.load(),
      append: (items, options) => session.append(items, options),
      ...(session.recordCallStart ? { recordCallStart: (s, c) => session.recordCallStart!(s, c) } : {}),
      ...journal,
    },
    note,
    saved: true,
    ...(unfinishedRun === undefined ? {} : { unfinishedRun }),
    hold: (onLost, body, signal) => holding(session, onLost, body, signal),
    close: () => store.close(),
  };
}

async function holding<T>(
  session: Session,
  onLost: (reason: string) => void,
  body: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  let lease: Lease | undefined;
  try {
    // `acquire` answers with a value, a Promise or an Observable, as every Session method may.
    const id = `loopctl-cli:${process.pid}:${randomUUID()}`;
    const acquiring = lastValueFrom(toLastValue(session.acquire!(id, { ttlMs: LEASE_TTL_MS })));
    lease = await untilAborted(acquiring, signal);
    // Cancelled while waiting for the store's lock: the run starts cancelled (it commits nothing) without it.
    if (lease === undefined) acquiring.then((late) => late?.release()).catch(() => undefined);
  } catch (error) {
    if (isConcurrentRunError(error)) {
      const pid = /\(process (\d+) on this host\)/.exec(error.message)?.[1];
      const who = pid === undefined ? 'another loopctl process' : `another loopctl process (pid ${pid})`;
      throw new ConversationBusyError(
        `${who} is running on this conversation: wait for it to end, ` +
          'or leave out --continue and --session to start a new one',
        { cause: error },
      );
    }
    if (!isSessionStorageError(error)) throw error;
  }
  if (lease === undefined) return body(); // cancelled, or the store cannot write: the run's commit will say so
  const held = lease;
  const renew = setInterval(() => {
    held.renew().catch((error: unknown) => {
      if (!isConcurrentRunError(error)) return; // a passing storage fault: the next renewal tries again
      clearInterval(renew);
      onLost('the conversation was taken over by another loopctl');
    });
  }, LEASE_TTL_MS / 3);
  renew.unref();
  try {
    return await body();
  } finally {
    clearInterval(renew);
    await held.release().catch(() => undefined); // a lease that cannot be released expires
  }
}

/** `promise`'s value, or undefined as soon as `signal` aborts (at once when it already has). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
