import type { Redis } from 'ioredis';
import {
  parseRunCommand,
  refusalOf,
  type CommandRefusal,
  type RunCommand,
  type RunCommandResult,
} from '../control/command.js';
import { ConfigurationError } from '../errors.js';
import type { Channels } from './channels.js';
import type { Keys } from './keys.js';

/** A steering item in Redis (the thread's queue, a run's mailbox hash): its id (the steering id) and its text. */
export interface WireItem {
  readonly id: string;
  readonly content: string;
}

/**
 * What a process asks the worker that runs a run (on the worker's channel): one run command (the package's
 * protocol, `parseRunCommand`) for run `runId`; a cancel also says how the run's partial is treated (`mode`).
 */
export interface WorkerRequest {
  readonly runId: string;
  readonly command: RunCommand;
  readonly mode?: CancelMode;
}

/**
 * How a cancelled run's partial is treated: `'cancel'` as any cancel (nothing committed), `'interrupt'` committed
 * with `commitPartial` before the run's terminal is stored (`ifBusy: 'interrupt'`), `'rollback'` discarded.
 */
export type CancelMode = 'cancel' | 'interrupt' | 'rollback';

/**
 * A worker's answer: `result`, what `applyRunCommand` answered (a refusal for a command it could not parse,
 * never a throw); or `not_here` (the run is not live on this worker, or its terminal is being stored: the
 * caller routes again).
 */
export type WorkerReply =
  { readonly kind: 'result'; readonly result: RunCommandResult } | { readonly kind: 'not_here' };

/** A request as a worker read it off its channel: parsed, or refused (with where to send the refusal). */
export type ReadRequest =
  | { readonly ok: true; readonly request: WorkerRequest & Envelope }
  | { readonly ok: false; readonly envelope: Envelope; readonly refusal: CommandRefusal };

const MODES = new Set(['cancel', 'interrupt', 'rollback']);

/**
 * Reads a message of a worker's channel; never throws. Its command goes through `parseRunCommand` (the one
 * validator), so a bad field is a `ConfigurationError` refusal naming it, answered to `replyTo`.
 */
export function readRequest(message: string): ReadRequest {
  let value: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(message);
    value = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    value = {};
  }
  const envelope: Envelope = {
    ...(typeof value['reqId'] === 'string' ? { reqId: value['reqId'] } : {}),
    ...(typeof value['replyTo'] === 'string' ? { replyTo: value['replyTo'] } : {}),
  };
  try {
    const runId = value['runId'];
    if (typeof runId !== 'string' || runId === '') throw new ConfigurationError('runId', 'must be a non-empty string');
    const mode = value['mode'];
    if (mode !== undefined && !MODES.has(mode as string)) {
      throw new ConfigurationError('mode', "must be 'cancel', 'interrupt' or 'rollback'");
    }
    const command = parseRunCommand(value['command']);
    return { ok: true, request: { runId, command, ...(mode ? { mode: mode as CancelMode } : {}), ...envelope } };
  } catch (error) {
    return { ok: false, envelope, refusal: refusalOf(error) };
  }
}

/** Where a request wants its answer. */
export interface Envelope {
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
      let reply: WorkerReply & { reqId?: unknown };
      try {
        reply = JSON.parse(message) as WorkerReply & { reqId?: unknown };
      } catch {
        return; // not an answer of ours
      }
      if (typeof reply?.reqId === 'string') this.#pending.get(reply.reqId)?.(reply);
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
