/**
 * The queue specs' fixture: worker child processes (./queue-worker.ts through tsx), a `queueRuns` on a queue and
 * key prefix of the spec's own, and cleanup of its Redis keys afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom, toArray, filter, type Observable } from 'rxjs';
import {
  queueRuns,
  type QueueRuns,
  type QueueRunsOptions,
  type StartWorkerOptions,
} from '../../../src/bullmq/index.js';
import type { RunEvent } from '../../../src/index.js';
import { repoRoot } from '../../support/openai-server.js';

const WORKER = fileURLToPath(new URL('./queue-worker.ts', import.meta.url));
const TSX = new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;

export const REDIS_URL = 'redis://127.0.0.1:6379';
/** The queue secret the specs' API processes and workers share (32 bytes and more). */
export const QUEUE_SECRET = 'queue-specs-secret-0123456789abcdef';
let counter = 0;

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly id: string;
  /** stdout so far. */
  readonly out: () => string;
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>;
}

type WorkerSettings = Partial<Omit<StartWorkerOptions, 'agents' | 'sessions'>> & {
  pgSchema?: string;
  suspend?: boolean;
  commitHook?: 'stop-before' | 'kill-after' | 'connection-faults';
  journalStopTurn?: number;
  /** The folder of the faults armed per run (./faults.ts). */
  faultDir?: string;
};

export interface QueueFixture {
  readonly queue: string;
  readonly prefix: string;
  readonly url: string;
  readonly runs: QueueRuns;
  readonly redis: Redis;
  worker(settings?: WorkerSettings): Promise<WorkerProcess>;
  cleanup(): Promise<void>;
}

/** A queue of its own (name and prefix unique to this process and call) with its `queueRuns`. */
export function queueFixture(options: Partial<QueueRunsOptions> & { url?: string } = {}): QueueFixture {
  const queue = `q${process.pid}x${counter++}`;
  const prefix = `lctest${process.pid}`;
  const url = options.url ?? REDIS_URL;
  // Steering waits up to 10 s for a worker here (a loaded machine); the 2 s default is pinned by its own spec.
  const runs = queueRuns({ connection: url, queue, prefix, steerTimeoutMs: 10_000, secret: QUEUE_SECRET, ...options });
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  const workers: WorkerProcess[] = [];
  return {
    queue,
    prefix,
    url,
    runs,
    redis,
    async worker(settings = {}) {
      const config = {
        connection: url,
        queue,
        prefix,
        secret: QUEUE_SECRET,
        lockDurationMs: 2000,
        stalledIntervalMs: 1000,
        ...settings,
      };
      const child = spawn(process.execPath, ['--import', TSX, WORKER, JSON.stringify(config)], {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: process.env,
      });
      let out = '';
      let err = '';
      child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const exited = new Promise<number | string>((resolve) =>
        child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
      );
      const id = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`worker not ready in 30 s: ${err}`)), 30_000);
        const check = () => {
          const m = /ready (\S+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        };
        child.stdout!.on('data', check);
        void exited.then((code) => reject(new Error(`worker exited ${code}: ${err}`)));
      });
      const proc = { child, id, out: () => out, exited };
      workers.push(proc);
      return proc;
    },
    async cleanup() {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await Promise.all(workers.map((w) => w.exited));
      await runs.close();
      const keys = await redis.keys(`${prefix}:${queue}:*`);
      for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
      redis.disconnect();
    },
  };
}

/** Every event of a run (up to its terminal one). */
export const allEvents = (events: Observable<RunEvent>) => lastValueFrom(events.pipe(toArray()));

/** The first event of `type`. */
export const firstOf = (events: Observable<RunEvent>, type: RunEvent['type']) =>
  firstValueFrom(events.pipe(filter((e) => e.type === type)));

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The seqs events stand for: a compacted `text_delta` (a finished run's trimmed stream) stands for fromSeq…seq. */
export function expandSeqs(events: readonly RunEvent[]): number[] {
  return events.flatMap((e) => {
    const from = e.type === 'text_delta' && e.fromSeq !== undefined ? e.fromSeq : e.seq;
    return Array.from({ length: e.seq - from + 1 }, (_, i) => from + i);
  });
}

/** True when the events stand for every seq from `first` on, once each, in order. */
export function gapless(events: readonly RunEvent[], first = 0): boolean {
  const seqs = expandSeqs(events);
  return seqs.every((s, i) => s === first + i);
}

/** The text of the events' deltas. */
export const textOf = (events: readonly RunEvent[]) =>
  events.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('');
