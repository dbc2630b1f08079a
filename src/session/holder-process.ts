/**
 * Node-only (imported by the SQLite and Postgres stores, never by the core entry): the process that holds a
 * lease, written into the lease's token, so that the next `acquire` on the same host can see that the holder
 * no longer exists and take its lease at once instead of waiting out its ttl ("a lease held by a run known
 * ended is released at once").
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** Which process holds a lease: its pid and the host it runs on (`os.hostname()`). */
export interface HolderProcess {
  readonly pid: number;
  readonly host: string;
}

/** A new lease token naming this process: `<uuid>/<pid>@<host>` (a uuid alone is still a valid token). */
export function holderToken(): string {
  return `${randomUUID()}/${process.pid}@${hostname()}`;
}

/** The process a token names, or undefined for a token that names none (an older loopctl's plain uuid). */
export function holderOf(token: string): HolderProcess | undefined {
  const match = /^[^/]+\/(\d+)@(.+)$/.exec(token);
  if (!match) return undefined;
  const pid = Number(match[1]);
  return Number.isSafeInteger(pid) && pid > 0 ? { pid, host: match[2]! } : undefined;
}

/**
 * True only when `token` names a process on this host that no longer exists (`process.kill(pid, 0)` fails
 * with `ESRCH`). A process on another host, one this user may not signal (`EPERM`: it exists), or a token
 * without a process is never called ended: its lease expires after its ttl as before.
 */
export function holderEnded(token: string): boolean {
  const holder = holderOf(token);
  if (holder === undefined || holder.host !== hostname() || holder.pid === process.pid) return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    return (error as { code?: unknown }).code === 'ESRCH';
  }
}

/** The words for a lease's holder in a refusal: `run R (pid P on this host)` or `run R (pid P on host H)`. */
export function describeHolder(runId: string, token: string | undefined): string {
  const holder = token === undefined ? undefined : holderOf(token);
  if (holder === undefined) return `run ${runId}`;
  const where = holder.host === hostname() ? 'this host' : `host ${holder.host}`;
  return `run ${runId} (process ${holder.pid} on ${where})`;
}
