import { isInstance } from '../describe.js';
import { LoopctlError } from '../errors.js';

/** Why a store refused its database: `missing` / `older` / `newer` schema, or a `corrupt` file or table. */
export type SessionSchemaProblem = 'missing' | 'older' | 'newer' | 'corrupt';

/**
 * A session database the store cannot use as it is ("a store never deletes what it cannot read"):
 * `problem` says why, `expectedVersion` is the schema version this loopctl uses, `foundVersion` the
 * one found (undefined when there is none or it cannot be read), `location` the file or schema.
 * Nothing is changed or deleted when this is thrown: an older schema is upgraded only by an explicit
 * `migrate` (Postgres) or by opening with a loopctl that knows its migrations (SQLite).
 */
export class SessionSchemaError extends LoopctlError {
  override readonly name: string = 'SessionSchemaError';
  readonly problem: SessionSchemaProblem;
  readonly expectedVersion: number;
  readonly foundVersion: number | undefined;
  readonly location: string;
  constructor(
    init: { problem: SessionSchemaProblem; expectedVersion: number; foundVersion?: number; location: string },
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${init.location}: ${message}`, options);
    this.problem = init.problem;
    this.expectedVersion = init.expectedVersion;
    this.foundVersion = init.foundVersion;
    this.location = init.location;
  }
}

/**
 * A session store could not read or write (disk full, a read-only file, a lost connection, a closed
 * store). `code` is the driver's (`SQLITE_FULL`, `SQLITE_READONLY`, a Postgres SQLSTATE such as
 * `53100`) or `closed`; `sessionId` names the session. A failed `append` stored nothing, so the
 * earlier history is intact; the engine reports it as `run_failed` with `stopReason: 'session_error'`.
 */
export class SessionStorageError extends LoopctlError {
  override readonly name: string = 'SessionStorageError';
  constructor(
    readonly sessionId: string | undefined,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** `rename(from, to)` named a session `from` that does not exist. */
export class SessionNotFoundError extends LoopctlError {
  override readonly name: string = 'SessionNotFoundError';
  constructor(readonly sessionId: string) {
    super(`no session "${sessionId}"`);
  }
}

/** `rename(from, to)` named a session `to` that exists already (nothing is overwritten). */
export class SessionExistsError extends LoopctlError {
  override readonly name: string = 'SessionExistsError';
  constructor(readonly sessionId: string) {
    super(`a session "${sessionId}" exists already`);
  }
}

/**
 * A journal write (`journalTurn`, `journalResponse`) by a claim of the run that a later claim took over: the
 * write stored nothing (docs/scale-out.md, "Continuing a lost run"). `runId` names the run, `claim` the
 * refused writer's claim, `fence` the lowest claim the journal still accepts (the later claim's). The engine
 * ends the writer's run `run_failed` (`session_error`); a queued run's terminal by that claim is refused too.
 */
export class JournalFencedError extends LoopctlError {
  override readonly name: string = 'JournalFencedError';
  constructor(
    readonly runId: string,
    readonly claim: number,
    readonly fence: number,
  ) {
    super(`the journal of run ${runId} belongs to claim ${fence}: a write by claim ${claim} is refused`);
  }
}

/** @returns true when `e` is a {@link JournalFencedError}. */
export const isJournalFencedError = (e: unknown): e is JournalFencedError => isInstance(e, JournalFencedError);
/** @returns true when `e` is a {@link SessionSchemaError}. */
export const isSessionSchemaError = (e: unknown): e is SessionSchemaError => isInstance(e, SessionSchemaError);
/** @returns true when `e` is a {@link SessionStorageError}. */
export const isSessionStorageError = (e: unknown): e is SessionStorageError => isInstance(e, SessionStorageError);
/** @returns true when `e` is a {@link SessionNotFoundError}. */
export const isSessionNotFoundError = (e: unknown): e is SessionNotFoundError => isInstance(e, SessionNotFoundError);
/** @returns true when `e` is a {@link SessionExistsError}. */
export const isSessionExistsError = (e: unknown): e is SessionExistsError => isInstance(e, SessionExistsError);
