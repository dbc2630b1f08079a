/**
 * A second process using the same session store, for the cross-process parts of `sessionContract`:
 * the parent drives it over JSON lines (stdin → requests, stdout → answers and events). The child is a
 * script that calls {@link servePeer} with a factory for the store; {@link spawnSessionPeer} starts it.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Item } from '../../items.js';
import type { Lease, SessionStore } from '../../session/session.js';
import { leasing } from './contract-lease.js';

/** An error as it crosses the process boundary. */
export interface PeerError {
  readonly name: string;
  readonly message: string;
  readonly field?: string;
}

/** What a peer's `acquire` gives: the lease, or the error the store refused it with. */
export type PeerLeaseResult = { readonly ok: true } | { readonly ok: false; readonly error: PeerError };

/**
 * A running peer process.
 * - `acquire`: takes a lease and keeps renewing it every `ttlMs / 3` until `release`, `kill` or `close`.
 * - `churn`: appends runs of `runSize` Items (run ids `churn-<from>`, `churn-<from + 1>`, …, each made by
 *   {@link churnRun}) back to back until killed; resolves once the first has begun. `churned` says which run
 *   last began and which last finished (-1: none).
 * - `recordCallStart`: the store's `Session.recordCallStart` in the peer (true: its record stored first).
 * - `kill`: SIGKILL (nothing of the peer runs after it: no release, no rollback by the peer); resolves at exit.
 * - `close`: ends the peer's input; it releases its leases, closes its store and exits.
 */
export interface SessionPeer {
  readonly pid: number;
  acquire(sessionId: string, runId: string, ttlMs: number): Promise<PeerLeaseResult>;
  release(): Promise<void>;
  append(sessionId: string, items: readonly Item[], runId?: string): Promise<void>;
  load(sessionId: string): Promise<Item[]>;
  recordCallStart(sessionId: string, suspensionId: string, callId: string): Promise<boolean>;
  churn(sessionId: string, options: { from: number; runSize: number; textBytes: number }): Promise<void>;
  readonly churned: { readonly begun: number; readonly done: number };
  kill(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a peer on the same store as `store` (a test's factory: it knows where `store` keeps its data). */
export type SpawnPeer = (store: SessionStore) => Promise<SessionPeer>;

/** How to start a peer script: `node ...execArgv script ...args` in `cwd`. */
export interface PeerCommand {
  readonly script: string;
  readonly args?: readonly string[];
  readonly execArgv?: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** How long (ms) a peer may take to start and open its store. */
const READY_MS = 30_000;

interface Message {
  id?: number;
  ok?: boolean;
  value?: unknown;
  error?: PeerError;
  ready?: boolean;
  event?: string;
  run?: number;
}

/**
 * Starts a peer script and resolves once it has opened its store; rejects with the peer's error (or its
 * exit and stderr) when it cannot.
 */
export function spawnSessionPeer(command: PeerCommand): Promise<SessionPeer> {
  const child = spawn(process.execPath, [...(command.execArgv ?? []), command.script, ...(command.args ?? [])], {
    cwd: command.cwd,
    env: command.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const churned = { begun: -1, done: -1 };
  let firstChurn: (() => void) | undefined;
  let nextId = 0;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const gone = (): Error => new Error(`the peer (pid ${child.pid}) exited: ${stderr.trim() || 'no output'}`);
  void exited.then(() => {
    for (const p of pending.values()) p.reject(gone());
    pending.clear();
  });
  const request = (op: string, args: Record<string, unknown>): Promise<unknown> =>
    new Promise((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(gone());
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.stdin.write(`${JSON.stringify({ id, op, ...args })}\n`);
    });
  return new Promise<SessionPeer>((resolve, reject) => {
    void exited.then(() => reject(gone()));
    const slow = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the peer (pid ${child.pid}) did not open its store within ${READY_MS} ms: ${stderr.trim()}`));
    }, READY_MS);
    void exited.then(() => clearTimeout(slow));
    createInterface({ input: child.stdout }).on('line', (line) => {
      let msg: Message;
      try {
        msg = JSON.parse(line) as Message;
      } catch {
        return;
      }
      if (msg.ready !== undefined) clearTimeout(slow);
      if (msg.ready === true) return resolve(peer);
      if (msg.ready === false) return reject(new Error(`the peer could not open its store: ${msg.error?.message}`));
      if (msg.event === 'begin') {
        churned.begun = msg.run!;
        firstChurn?.();
        firstChurn = undefined;
      } else if (msg.event === 'done') churned.done = msg.run!;
      else if (msg.id !== undefined) {
        const p = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.ok) p?.resolve(msg.value);
        else p?.reject(Object.assign(new Error(msg.error?.message), msg.error));
      }
    });
    const peer: SessionPeer = {
      pid: child.pid!,
      churned,
      acquire: (sessionId, runId, ttlMs) =>
        request('acquire', { sessionId, runId, ttlMs }).then(
          () => ({ ok: true }) as const,
          (err: PeerError) => ({ ok: false, error: { name: err.name, message: err.message, field: err.field } }),
        ),
      release: () => request('release', {}).then(() => undefined),
      append: (sessionId, items, runId) => request('append', { sessionId, items, runId }).then(() => undefined),
      load: (sessionId) => request('load', { sessionId }) as Promise<Item[]>,
      recordCallStart: (sessionId, suspensionId, callId) =>
        request('recordCallStart', { sessionId, suspensionId, callId }) as Promise<boolean>,
      churn: (sessionId, options) =>
        new Promise<void>((res, rej) => {
          firstChurn = res;
          request('churn', { sessionId, ...options }).catch(rej);
        }),
      kill: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      },
      close: async () => {
        child.stdin.end();
        await exited;
      },
    };
  });
}

const toPeerError = (err: unknown): PeerError => {
  const e = err as { name?: unknown; message?: unknown; field?: unknown } | null;
  const out: { name: string; message: string; field?: string } = {
    name: typeof e?.name === 'string' ? e.name : 'Error',
    message: typeof e?.message === 'string' ? e.message : String(err),
  };
  if (typeof e?.field === 'string') out.field = e.field;
  return out;
};

const say = (msg: Message): void => {
  process.stdout.write(`${JSON.stringify(msg)}\n`); // synchronous on a pipe: written before a SIGKILL can land
};

/**
 * The peer side: opens the store `makeStore` gives, says it is ready, then serves the parent's requests
 * until its input ends (then it releases its leases, closes the store and exits).
 */
export async function servePeer(makeStore: () => SessionStore | Promise<SessionStore>): Promise<void> {
  let store: SessionStore;
  try {
    store = await makeStore();
  } catch (err) {
    say({ ready: false, error: toPeerError(err) });
    process.exit(1);
  }
  say({ ready: true });
  const held: { lease: Lease; timer: NodeJS.Timeout }[] = [];
  const release = async (): Promise<void> => {
    for (const { lease, timer } of held.splice(0)) {
      clearInterval(timer);
      await lease.release();
    }
  };
  const ops: Record<string, (req: Record<string, any>) => Promise<unknown>> = {
    acquire: async ({ sessionId, runId, ttlMs }) => {
      const session = store.session(sessionId);
      const lease = await leasing(session)(runId, { ttlMs });
      const timer = setInterval(() => void lease.renew().catch(() => clearInterval(timer)), ttlMs / 3);
      held.push({ lease, timer });
    },
    release,
    append: async ({ sessionId, items, runId }) => store.session(sessionId).append(items, runId ? { runId } : {}),
    load: async ({ sessionId }) => store.session(sessionId).load(),
    recordCallStart: async ({ sessionId, suspensionId, callId }) =>
      store.session(sessionId).recordCallStart!(suspensionId, callId),
    churn: async ({ sessionId, from, runSize, textBytes }) => {
      const session = store.session(sessionId);
      for (let run = from; ; run++) {
        const items = churnRun(run, runSize, textBytes);
        say({ event: 'begin', run });
        await session.append(items, { runId: `churn-${run}` });
        say({ event: 'done', run });
      }
    },
  };
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const req = JSON.parse(line) as { id: number; op: string };
    const op = ops[req.op];
    if (!op) return say({ id: req.id, ok: false, error: { name: 'Error', message: `unknown op ${req.op}` } });
    op(req).then(
      (value) => say({ id: req.id, ok: true, value }),
      (err: unknown) => say({ id: req.id, ok: false, error: toPeerError(err) }),
    );
  });
  lines.on('close', () => {
    void release()
      .then(() => store.close())
      .finally(() => process.exit(0));
  });
}

/** The Items of churn run `run`: a user item then `runSize - 1` tool results, each naming its run and place. */
export function churnRun(run: number, runSize: number, textBytes: number): Item[] {
  const pad = 'x'.repeat(Math.max(0, textBytes));
  return Array.from({ length: runSize }, (_, i): Item =>
    i === 0
      ? { type: 'user', id: `churn-${run}`, text: `run ${run} ${pad}` }
      : { type: 'tool_result', callId: `churn-${run}-${i}`, output: `run ${run} item ${i} ${pad}`, isError: false },
  );
}
