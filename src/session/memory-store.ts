import { checkId, compareIds } from './checks.js';
import { SessionExistsError, SessionNotFoundError } from './errors.js';
import { refusal } from './lease-errors.js';
import { MemorySession, memoryState, type MemorySessionOptions, type MemoryState } from './memory-session.js';
import type { SessionInfo, SessionStore } from './session.js';

const emptyState = (): MemoryState => ({
  items: [],
  stored: new Set(),
  journals: new Map(),
  claims: new Map(),
  createdAt: undefined,
  updatedAt: undefined,
});

/**
 * An in-memory {@link SessionStore} of {@link MemorySession}s, for tests and for programs that keep
 * nothing: `session(id)` gives the same `MemorySession` for the same id while the store lives.
 * Leases hold within this process only. `options.now` is the clock of leases and times (ms).
 */
export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, MemorySession>();

  constructor(private readonly options: MemorySessionOptions = {}) {}

  /** The session named `id`; throws `ConfigurationError` (field `id`) for an empty or non-string id. */
  session(id: string): MemorySession {
    checkId(id, 'id');
    let session = this.#sessions.get(id);
    if (!session) {
      session = new MemorySession([], this.options);
      memoryState(session).name = `session "${id}"`;
      this.#sessions.set(id, session);
    }
    return session;
  }

  async list(): Promise<readonly SessionInfo[]> {
    const out: SessionInfo[] = [];
    for (const [id, session] of this.#sessions) {
      const { items, createdAt, updatedAt } = memoryState(session).state;
      if (createdAt === undefined || updatedAt === undefined) continue;
      out.push({ id, items: items.length, createdAt, updatedAt });
    }
    return out.sort((a, b) => b.updatedAt - a.updatedAt || compareIds(a.id, b.id));
  }

  async delete(id: string): Promise<boolean> {
    checkId(id, 'id');
    const session = this.#sessions.get(id);
    if (!session) return false;
    const access = memoryState(session);
    const holder = access.lease.holder();
    if (holder !== undefined) throw refusal(access.name, holder);
    const existed = access.state.createdAt !== undefined;
    access.state = emptyState();
    return existed;
  }

  async rename(from: string, to: string): Promise<void> {
    checkId(from, 'from');
    checkId(to, 'to');
    const source = memoryState(this.session(from));
    const target = memoryState(this.session(to));
    for (const access of [source, target]) {
      const holder = access.lease.holder();
      if (holder !== undefined) throw refusal(access.name, holder);
    }
    if (source.state.createdAt === undefined) throw new SessionNotFoundError(from);
    if (target.state.createdAt !== undefined) throw new SessionExistsError(to);
    target.state = source.state;
    source.state = emptyState();
  }

  async close(): Promise<void> {}
}
