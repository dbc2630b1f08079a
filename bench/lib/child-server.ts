import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The benchmark server (bench/server.ts) running in a child process. */
export interface ChildServer {
  readonly baseURL: string;
  /** Open TCP connections, responses in progress and requests so far, as the server sees them. */
  stats(): Promise<{ open: number; active: number; requests: number }>;
  /** Resolves with the epoch time (ms, sub-ms precision) at which the server last had no response in progress. */
  whenIdle(): Promise<number>;
  close(): Promise<void>;
}

const serverFile = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'server.ts');

/**
 * Forks bench/server.ts (`node --import tsx`), or another server script `file` that speaks the same IPC (e.g.
 * bench/gemini-server.ts), and resolves once it listens.
 */
export async function startChildServer(file: string = serverFile): Promise<ChildServer> {
  const child: ChildProcess = fork(file, [], {
    execArgv: ['--import', import.meta.resolve('tsx')],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
    child.once('message', (m) => resolve((m as { port: number }).port));
  });
  const ask = <T>(msg: string, key: string): Promise<T> =>
    new Promise((resolve) => {
      const on = (m: unknown) => {
        if (m && typeof m === 'object' && key in m) {
          child.off('message', on);
          resolve(m as T);
        }
      };
      child.on('message', on);
      child.send(msg);
    });
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    stats: () => ask('stats', 'active'),
    whenIdle: () => ask<{ idleAt: number }>('whenIdle', 'idleAt').then((m) => m.idleAt),
    close: () =>
      new Promise<void>((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', () => resolve());
        child.disconnect();
      }),
  };
}

/**
 * A fresh undici Agent (the class behind Node's global fetch dispatcher; the
 * `undici` package is not a dependency) and a `fetch` that uses it, so a
 * benchmark can count and then close the sockets its requests leave in the
 * pool. Note (undici 6.24 in Node 20.20): after every aborted streamed
 * request the client reconnects once and keeps that socket idle in the pool.
 */
export async function privateFetch(): Promise<{ fetch: typeof fetch; destroy: () => Promise<void> }> {
  const key = Symbol.for('undici.globalDispatcher.1');
  if (!(globalThis as Record<symbol, unknown>)[key]) await fetch('http://127.0.0.1:1').catch(() => undefined);
  const Agent = (
    (globalThis as Record<symbol, unknown>)[key] as { constructor: new (o: object) => { destroy(): Promise<void> } }
  ).constructor;
  const dispatcher = new Agent({});
  return {
    fetch: ((url: RequestInfo | URL, init?: RequestInit) =>
      fetch(url, { ...init, dispatcher } as RequestInit)) as typeof fetch,
    destroy: () => dispatcher.destroy(),
  };
}

/** Sockets (TCP and Unix) this process has open, from /proc/self/fd (Linux), including unref'd ones. */
export function socketFds(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/** Epoch ms with sub-ms precision, comparable with the server's `whenIdle()`. */
export const epochNow = (): number => performance.timeOrigin + performance.now();
