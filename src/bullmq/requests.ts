import type { Redis } from 'ioredis';
import type { Channels } from './channels.js';
import type { Keys } from './keys.js';

/** A steering item on the wire and in Redis: its id (the steering id) and its text. */
export interface WireItem {
  readonly id: string;
  readonly content: string;
}

/** What a process asks the worker that runs a run (on the worker's channel). */
export type WorkerRequest =
  | { readonly op: 'cancel'; readonly runId: string; readonly reason: unknown; readonly mode: CancelMode }
  | { readonly op: 'steer'; readonly runId: string; readonly items: readonly WireItem[] }
  | { readonly op: 'withdraw'; readonly runId: string; readonly id: string }
  | {
      readonly op: 'decide';
      readonly runId: string;
      readonly callId: string;
      readonly approve: boolean;
      readonly reason?: string;
    }
  | {
      readonly op: 'stop';
      readonly runId: string;
      readonly at: 'turn_end' | 'tool_call_end';
      readonly graceMs?: number;
    };

/**
 * How a cancelled run's partial is treated: `'cancel'` as any cancel (nothing committed), `'interrupt'` committed
 * with `commitPartial` before the run's terminal is stored (`ifBusy: 'interrupt'`), `'rollback'` discarded.
 */
export type CancelMode = 'cancel' | 'interrupt' | 'rollback';

/**
 * A worker's answer: `ok` with what the in-memory mailbox (or the run's handle) decided; `not_live` (the run is
 * not live there).
 */
export type WorkerReply =
  | {
      readonly ok: true;
      readonly ids?: readonly string[];
      readonly removed?: boolean;
      readonly stopped?: boolean;
      readonly decided?: boolean;
    }
  | { readonly ok: false; readonly why: 'not_live' };

interface Envelope {
  readonly reqId?: string;
  readonly replyTo?: string;
}

/**
 * Request/response over Redis pub/sub: a request is published on the worker's channel with a reply channel of
 * this process; the answer comes there. No answer within the timeout resolves `undefined` (the caller decides
 * what that means; steering says `MailboxUnavailableError`, never a guess).
 */
export class Requests {
  readonly #pending = new Map<string, (reply: WorkerReply) => void>();
  readonly #replyTo: string;
  #ready: Promise<() => void> | undefined;
  #seq = 0;

  constructor(
    private readonly redis: Redis,
    private readonly channels: Channels,
    private readonly keys: Keys,
    clientId: string,
  ) {
    this.#replyTo = keys.replyChannel(clientId);
  }

  #listen(): Promise<() => void> {
    this.#ready ??= this.channels.listen(this.#replyTo, (message) => {
      const reply = JSON.parse(message) as WorkerReply & { reqId: string };
      this.#pending.get(reply.reqId)?.(reply);
    });
    return this.#ready;
  }

  /** Publishes `request` to the worker; resolves with how many processes got it (0: no such worker listens). */
  notify(workerId: string, request: WorkerRequest): Promise<number> {
    return this.redis.publish(this.keys.workerChannel(workerId), JSON.stringify(request));
  }

  /** Asks the worker; resolves with its answer, or `undefined` when none came within `timeoutMs`. */
  async ask(workerId: string, request: WorkerRequest, timeoutMs: number): Promise<WorkerReply | undefined> {
    await this.#listen();
    const reqId = `${++this.#seq}`;
    return new Promise<WorkerReply | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(reqId);
        resolve(undefined);
      }, timeoutMs);
      this.#pending.set(reqId, (reply) => {
        clearTimeout(timer);
        this.#pending.delete(reqId);
        resolve(reply);
      });
      const envelope: Envelope = { reqId, replyTo: this.#replyTo };
      this.redis
        .publish(this.keys.workerChannel(workerId), JSON.stringify({ ...request, ...envelope }))
        .catch(() => undefined); // an unsent request is an unanswered one
    });
  }

  close(): void {
    this.#ready?.then((off) => off()).catch(() => undefined);
  }
}

/** Sends `reply` for `request` when it asked for one. */
export function answer(redis: Redis, request: Envelope, reply: WorkerReply): Promise<unknown> | undefined {
  if (typeof request.replyTo !== 'string' || typeof request.reqId !== 'string') return undefined;
  return redis.publish(request.replyTo, JSON.stringify({ ...reply, reqId: request.reqId })).catch(() => undefined);
}
