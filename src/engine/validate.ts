import { isObservable } from 'rxjs';
import { CancelSignal } from '../cancel/cancel-signal.js';
import { ConfigurationError } from '../errors.js';
import { ItemSchema, type Item } from '../items.js';
import { Mailbox } from '../mailbox/mailbox.js';
import type { Hooks, ReplayMode, RunOptions, StartOptions } from './types.js';

/** Field checks shared by `defineAgent` and `run`; each throws `ConfigurationError` naming `field`. */
export function checkObject(value: unknown, field: string): void {
  if (value === null || typeof value !== 'object') throw new ConfigurationError(field, 'must be an object');
}

export function checkPositiveInt(value: unknown, field: string): void {
  if (!Number.isInteger(value) || (value as number) < 1)
    throw new ConfigurationError(field, `must be a positive integer (got ${String(value)})`);
}

function checkMs(value: unknown, field: string, allowZero = false, orElse = ''): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    const kind = allowZero ? 'non-negative' : 'positive';
    throw new ConfigurationError(field, `must be a ${kind} number of ms${orElse} (got ${String(value)})`);
  }
}

const HOOK_NAMES = ['turnStarted', 'beforeModelCall', 'beforeToolCall', 'afterToolCall', 'runEnded'] as const;

export function checkHooks(hooks: Hooks<any>, field: string): void {
  checkObject(hooks, field);
  for (const name of HOOK_NAMES) {
    const h = hooks[name];
    if (h !== undefined && typeof h !== 'function') throw new ConfigurationError(`${field}.${name}`, 'must be a function');
  }
}

/** Validates `run(agent, input, options)` arguments (see `RunOptions`) before anything runs. */
export function validateRunArgs(input: unknown, options: RunOptions<any>): readonly Item[] | string {
  if (typeof input !== 'string') {
    if (!Array.isArray(input)) throw new ConfigurationError('input', 'must be a string or an array of Items');
    input.forEach((item, i) => {
      const parsed = ItemSchema.safeParse(item);
      if (!parsed.success) throw new ConfigurationError(`input[${i}]`, parsed.error.issues[0]?.message ?? 'invalid Item');
    });
  }
  checkObject(options, 'options');
  const o = options;
  if (o.cancel !== undefined && !(o.cancel instanceof CancelSignal)) throw new ConfigurationError('options.cancel', 'must be a CancelSignal');
  if (o.cancel$ !== undefined && !isObservable(o.cancel$)) throw new ConfigurationError('options.cancel$', 'must be an Observable');
  if (o.signal !== undefined && !isAbortSignal(o.signal)) throw new ConfigurationError('options.signal', 'must be an AbortSignal');
  if (o.mailbox !== undefined && !(o.mailbox instanceof Mailbox)) throw new ConfigurationError('options.mailbox', 'must be a Mailbox');
  if (o.steer$ !== undefined && !isObservable(o.steer$)) throw new ConfigurationError('options.steer$', 'must be an Observable of strings');
  if (o.session !== undefined) {
    checkObject(o.session, 'options.session');
    if (typeof o.session.load !== 'function') throw new ConfigurationError('options.session.load', 'must be a function');
    if (typeof o.session.append !== 'function') throw new ConfigurationError('options.session.append', 'must be a function');
  }
  if (o.hooks !== undefined) checkHooks(o.hooks, 'options.hooks');
  if (o.retry !== undefined && o.retry !== false) {
    checkObject(o.retry, 'options.retry');
    const r = o.retry;
    if (r.maxRetries !== undefined && !(Number.isInteger(r.maxRetries) && r.maxRetries >= 0))
      throw new ConfigurationError('options.retry.maxRetries', `must be an integer >= 0 (got ${String(r.maxRetries)})`);
    if (r.initialDelayMs !== undefined) checkMs(r.initialDelayMs, 'options.retry.initialDelayMs', true);
    if (r.maxDelayMs !== undefined) checkMs(r.maxDelayMs, 'options.retry.maxDelayMs', true);
    if (r.multiplier !== undefined && !(typeof r.multiplier === 'number' && r.multiplier >= 1))
      throw new ConfigurationError('options.retry.multiplier', 'must be a number >= 1');
    if (r.maxRetryAfterMs !== undefined) checkMs(r.maxRetryAfterMs, 'options.retry.maxRetryAfterMs', true);
  }
  if (o.deadlines !== undefined) {
    checkObject(o.deadlines, 'options.deadlines');
    for (const key of ['firstEventMs', 'idleMs', 'requestMs', 'toolMs', 'runMs', 'commitMs'] as const) {
      const v = o.deadlines[key];
      // `false` turns a deadline off (its default included); absent takes the default.
      if (v !== undefined && v !== false) checkMs(v, `options.deadlines.${key}`, false, ', or false for none');
    }
  }
  if (o.stream !== undefined && typeof o.stream !== 'boolean') throw new ConfigurationError('options.stream', 'must be a boolean');
  if (o.scheduler !== undefined && (typeof o.scheduler !== 'object' || typeof o.scheduler?.schedule !== 'function'))
    throw new ConfigurationError('options.scheduler', 'must be an RxJS SchedulerLike');
  if (o.idGenerator !== undefined && typeof o.idGenerator !== 'function') throw new ConfigurationError('options.idGenerator', 'must be a function');
  if (o.random !== undefined && typeof o.random !== 'function') throw new ConfigurationError('options.random', 'must be a function returning [0, 1)');
  if (o.telemetry !== undefined && typeof (o.telemetry as { open?: unknown } | null)?.open !== 'function')
    throw new ConfigurationError('options.telemetry', 'must be a RunTelemetry (with open(), e.g. withTelemetry())');
  return input as readonly Item[] | string;
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return typeof AbortSignal !== 'undefined' && value instanceof AbortSignal;
}

/** `options.replay` of `start()`: `'all'` (the default) or `'compact'`; anything else is a `ConfigurationError`. */
export function checkReplay(options: StartOptions<any>): ReplayMode {
  const replay = options.replay ?? 'all';
  if (replay !== 'all' && replay !== 'compact') {
    throw new ConfigurationError('options.replay', `must be 'all' or 'compact' (got ${String(replay)})`);
  }
  return replay;
}
