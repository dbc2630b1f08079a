import type { Redis } from 'ioredis';
import {
  parseRunCommand,
  refusalOf,
  type CommandRefusal,
  type RunCommand,
  type RunCommandResult,
} from '../control/command.js';
import { ConfigurationError } from '../errors.js';
import { QueueAuthError, type QueueAuth } from './auth.js';
import type { Channels } from './channels.js';
import type { Keys } from './keys.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * A steering item in Redis (the thread's queue, a run's mailbox hash): its id (the steering id), its text and
 * its tag (`mac`, over the thread, the id and the text: {@link steerParts}); a worker drops an item whose tag
 * does not match the thread it runs.
 */
export interface WireItem {
  readonly id: string;
  readonly content: string;
  readonly mac?: string;
}

/** What a steering item's tag covers: the thread it is for, its id and its text. */
export const steerParts = (thread: string, id: string, content: string) => ['steer', thread, id, content];

/** `item` with its tag for `thread`. */
export function signItem(auth: QueueAuth, thread: string, item: { id: string; content: string }): WireItem {
  const mac = auth.sign(steerParts(thread, item.id, item.content));
  return { id: item.id, content: item.content, ...(mac ? { mac } : {}) };
}

/**
 * What a process asks the worker that runs a run (on the worker's channel): one run command (the package's
 * protocol, `parseRunCommand`) for run `runId`; a cancel also says how the run's partial is treated (`mode`).
 */
export interface WorkerRequest {
  readonly runId: string;
  readonly command: RunCommand;
  readonly mode?: CancelMode;
  /** The command's id (a UUID): a run applies each command id once; a second message with it is `replayed`. */
  readonly cid: string;
}

/**
 * What a request's tag (`mac`) covers: the run, the command id, the command as sent, the mode and where the
 * answer goes. So a captured request cannot be aimed at another run, changed, or answered elsewhere.
 */
const requestParts = (m: Record<string, unknown>) => [
  'request',
  m['runId'] ?? null,
  m['cid'] ?? null,
  m['command'] ?? null,
  m['mode'] ?? null,
  m['reqId'] ?? null,
  m['replyTo'] ?? null,
];

/** What an answer's tag covers: the command id it answers, and the answer. */
const replyParts = (cid: string, reply: WorkerReply) => ['reply', cid, reply];

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
 * Reads a message of a worker's channel; never throws. Its tag is checked first (a missing or wrong one is a
 * `QueueAuthError` refusal, `unsigned` / `mis_signed`); then its command goes through `parseRunCommand` (the one
 * validator), so a bad field is a `ConfigurationError` refusal naming it, answered to `replyTo`.
 */
export function readRequest(message: string, auth: QueueAuth): ReadRequest {
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
    ...(typeof value['cid'] === 'string' ? { cid: value['cid'] } : {}),
  };
  try {
    const refused = auth.verify(requestParts(value), value['mac']);
    if (refused !== undefined) throw new QueueAuthError(refused, 'the command is not signed with the queue secret');
    const runId = value['runId'];
    if (typeof runId !== 'string' || runId === '') throw new ConfigurationError('runId', 'must be a non-empty string');
    const cid = value['cid'];
    if (typeof cid !== 'string' || cid === '') throw new ConfigurationError('cid', 'must be a non-empty string');
    const mode = value['mode'];
    if (mode !== undefined && !MODES.has(mode as string)) {
      throw new ConfigurationError('mode', "must be 'cancel', 'interrupt' or 'rollback'");
    }
    const command = parseRunCommand(value['command']);
    const request = { runId, cid, command, ...(mode ? { mode: mode as CancelMode } : {}), ...envelope };
    return { ok: true, request };
  } catch (error) {
    return { ok: false, envelope, refusal: refusalOf(error) };
  }
}

/** Where a request wants its answer. */
export interface Envelope {
  readonly reqId?: string;
  readonly replyTo?: string;
  /** The command id the answer's tag names. */
  readonly cid?: string;
}

/** The message of `request` (with `envelope`) as sent: signed. */
function signedMessage(auth: QueueAuth, request: WorkerRequest, envelope: Envelope = {}): string {
  const message = { ...request, ...envelope };
  const mac = auth.sign(requestParts(message));
  return JSON.stringify(mac ? { ...message, mac } : message);
}

/** How often a process waiting for an answer also reads the run's answers hash (ms). */
const ANSWER_POLL_MS = 250;

/**
 * Commands as durable state (docs/scale-out.md, "Control is state"): a command is recorded in the run's control
 * hash, signed, by one script that also publishes a wake-up to the run's worker; the worker reads the hash
 * when woken, when its subscriber reconnects and on a short poll. An answer comes on this process's reply
 * channel and is stored in the run's answers hash too (read every 250 ms while waiting), so neither side's
 * reconnect loses it. No answer within the timeout resolves `undefined` (the caller decides what that means;
 * steering says `MailboxUnavailableError`, never a guess).
 */
export class Requests {
  readonly #pending = new Map<string, { readonly cid: string; readonly settle: (reply: WorkerReply) => void }>();
  readonly #replyTo: string;
  #ready: Promise<() => void> | undefined;
  #seq = 0;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly channels: Channels,
    private readonly keys: Keys,
    clientId: string,
    private readonly auth: QueueAuth,
  ) {
    this.#replyTo = keys.replyChannel(clientId);
  }

  #listen(): Promise<() => void> {
    this.#ready ??= this.channels.listen(this.#replyTo, (message) => {
      let reply: { reqId?: unknown };
      try {
        reply = JSON.parse(message) as { reqId?: unknown };
      } catch {
        return; // not an answer of ours
      }
      const waiting = typeof reply?.reqId === 'string' ? this.#pending.get(reply.reqId) : undefined;
      if (waiting !== undefined) this.#accept(waiting, reply);
    });
    return this.#ready;
  }

  /** Settles `waiting` with `reply` when it is signed for its command (else it is dropped: unanswered). */
  #accept(waiting: { cid: string; settle: (reply: WorkerReply) => void }, reply: unknown): void {
    const { reqId: _reqId, mac, ...answer } = reply as WorkerReply & { reqId?: unknown; mac?: unknown };
    if (this.auth.verify(replyParts(waiting.cid, answer as WorkerReply), mac) !== undefined) return;
    waiting.settle(answer as WorkerReply);
  }

  /**
   * Records `request` for its run (and wakes the run's worker); no answer awaited. Resolves with what the
   * record script said: `ended` when the run has its terminal (nothing recorded).
   */
  async send(request: WorkerRequest): Promise<'recorded' | 'ended' | 'applied'> {
    const [kind] = await this.redis.lcRecord(
      this.keys.ns,
      request.runId,
      request.cid,
      signedMessage(this.auth, request),
    );
    return kind as 'recorded' | 'ended' | 'applied';
  }

  /**
   * Records `request` and waits for its answer; a run that ended answers `not_here` (the caller routes again);
   * resolves `undefined` when no answer came within `timeoutMs`.
   */
  async ask(request: WorkerRequest, timeoutMs: number): Promise<WorkerReply | undefined> {
    await this.#listen();
    const reqId = `${++this.#seq}`;
    const answers = this.keys.answers(request.runId);
    return new Promise<WorkerReply | undefined>((resolve) => {
      let poll: ReturnType<typeof setInterval> | undefined;
      const done = (reply: WorkerReply | undefined) => {
        clearTimeout(timer);
        clearInterval(poll);
        this.#pending.delete(reqId);
        if (reply !== undefined) this.redis.hdel(answers, request.cid).catch(() => undefined);
        resolve(reply);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      const waiting = { cid: request.cid, settle: done };
      this.#pending.set(reqId, waiting);
      const envelope: Envelope = { reqId, replyTo: this.#replyTo, cid: request.cid };
      this.redis.lcRecord(this.keys.ns, request.runId, request.cid, signedMessage(this.auth, request, envelope)).then(
        ([kind]) => {
          if (kind === 'ended') return done({ kind: 'not_here' });
          // The answer stored (its publish lost), or the run ended with the command never taken: not here.
          const check = async () => {
            const stored = await this.redis.hget(answers, request.cid);
            if (stored !== null) return this.#accept(waiting, JSON.parse(stored));
            if ((await this.redis.hexists(this.keys.run(request.runId), 'terminal')) === 0) return;
            const late = await this.redis.hget(answers, request.cid);
            if (late !== null) this.#accept(waiting, JSON.parse(late));
            else if (await this.#untaken(request)) done({ kind: 'not_here' });
          };
          poll = setInterval(() => void check().catch(() => undefined), ANSWER_POLL_MS);
        },
        () => undefined, // an unrecorded request is an unanswered one
      );
    });
  }

  /** True when the run's control hash still holds `request` (no worker took it): it is dropped. */
  async #untaken(request: WorkerRequest): Promise<boolean> {
    return (await this.redis.lcTake(this.keys.ns, request.runId, request.cid, 'drop'))[0] === 1;
  }

  close(): void {
    this.#ready?.then((off) => off()).catch(() => undefined);
  }
}

/**
 * Sends `reply` for `request` of run `runId` when it asked for one, signed for its command id: stored in the
 * run's answers hash, then published on the asker's reply channel.
 */
export function answer(
  redis: Redis,
  auth: QueueAuth,
  keys: Keys,
  runId: string,
  request: Envelope,
  reply: WorkerReply,
): Promise<unknown> | undefined {
  if (typeof request.replyTo !== 'string' || typeof request.reqId !== 'string') return undefined;
  const mac = auth.sign(replyParts(request.cid ?? '', reply));
  const message = JSON.stringify({ ...reply, reqId: request.reqId, ...(mac ? { mac } : {}) });
  const stored = request.cid ? redis.hset(keys.answers(runId), request.cid, message) : Promise.resolve(0);
  return stored.then(() => redis.publish(request.replyTo!, message)).catch(() => undefined);
}
