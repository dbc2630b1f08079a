import { CancelSignal } from '../cancel/cancel-signal.js';
import { checkControl } from '../control/run-control.js';
import { keyBytes, MIN_SUSPENSION_KEY_BYTES } from '../control/seal.js';
import { isInstance, isObservableTotal, readProp } from '../describe.js';
import { checkDurationMs } from '../duration.js';
import { ConfigurationError } from '../errors.js';
import { ItemSchema, type Item } from '../items.js';
import { Mailbox } from '../mailbox/mailbox.js';
import { parseTraceparent } from '../runs/trace-carrier.js';
import { checkBudget } from './budget/options.js';
import { checkFrontendTools } from '../tools/frontend-tool.js';
import type { Hooks, ReplayMode, RunOptions, StartOptions } from './types.js';

const UNREADABLE = Symbol('unreadable');
const CANNOT_BE_READ = 'cannot be read (a getter or Proxy trap threw)';

/**
 * Field checks shared by `defineAgent` and `run`; each throws `ConfigurationError` naming `field`.
 * Options are foreign values: one that cannot be read (a revoked Proxy) is refused naming it too.
 */
export function checkObject(value: unknown, field: string): void {
  if (value === null || typeof value !== 'object') throw new ConfigurationError(field, 'must be an object');
  try {
    Reflect.getPrototypeOf(value); // throws for a revoked Proxy, whatever is read next
  } catch {
    throw new ConfigurationError(field, CANNOT_BE_READ);
  }
}

/** `obj[key]`, or a `ConfigurationError` naming `field` when reading it throws. */
function read<T>(obj: object, key: PropertyKey, field: string): T {
  const value = readProp(obj, key, UNREADABLE);
  if (value === UNREADABLE) throw new ConfigurationError(field, CANNOT_BE_READ);
  return value as T;
}

export function checkPositiveInt(value: unknown, field: string): void {
  if (!Number.isInteger(value) || (value as number) < 1)
    throw new ConfigurationError(field, `must be a positive integer (got ${String(value)})`);
}

function checkMs(value: unknown, field: string, allowZero = false, orElse = ''): void {
  checkDurationMs(value, field, { min: allowZero ? 0 : 1, orElse });
}

const HOOK_NAMES = [
  'turnStarted',
  'prepareRequest',
  'beforeModelCall',
  'beforeToolCall',
  'afterToolCall',
  'runEnded',
] as const;

export function checkHooks(hooks: Hooks<any>, field: string): void {
  checkObject(hooks, field);
  for (const name of HOOK_NAMES) {
    const h = read(hooks, name, `${field}.${name}`);
    if (h !== undefined && typeof h !== 'function')
      throw new ConfigurationError(`${field}.${name}`, 'must be a function');
  }
}

/** Validates `run(agent, input, options)` arguments (see `RunOptions`) before anything runs. */
export function validateRunArgs(input: unknown, options: RunOptions<any>): readonly Item[] | string {
  if (typeof input !== 'string') checkInput(input);
  checkObject(options, 'options');
  const o = snapshot(options, OPTION_KEYS, 'options');
  const refuse = (field: string, rule: string): never => {
    throw new ConfigurationError(`options.${field}`, rule);
  };
  if (o.cancel !== undefined && !isInstance(o.cancel, CancelSignal)) refuse('cancel', 'must be a CancelSignal');
  if (o.cancel$ !== undefined && !isObservableTotal(o.cancel$)) refuse('cancel$', 'must be an Observable');
  if (o.signal !== undefined && !isAbortSignal(o.signal)) refuse('signal', 'must be an AbortSignal');
  if (o.mailbox !== undefined && !isInstance(o.mailbox, Mailbox)) refuse('mailbox', 'must be a Mailbox');
  if (o.steer$ !== undefined && !isObservableTotal(o.steer$)) refuse('steer$', 'must be an Observable of strings');
  if (o.session !== undefined) {
    checkObject(o.session, 'options.session');
    for (const method of ['load', 'append', 'acquire'] as const) {
      const fn = read(o.session, method, `options.session.${method}`);
      // `acquire` is optional: a session without it is leased in this process only.
      if (typeof fn !== 'function' && (method !== 'acquire' || fn !== undefined))
        throw new ConfigurationError(`options.session.${method}`, 'must be a function');
    }
  }
  if (o.hooks !== undefined) checkHooks(o.hooks, 'options.hooks');
  if (o.retry !== undefined && o.retry !== false) {
    checkObject(o.retry, 'options.retry');
    const r = snapshot(o.retry, RETRY_KEYS, 'options.retry');
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
    for (const key of ['firstEventMs', 'idleMs', 'requestMs', 'toolMs', 'runMs', 'commitMs', 'approvalMs'] as const) {
      const v = read(o.deadlines, key, `options.deadlines.${key}`);
      // `false` turns a deadline off (its default included); absent takes the default.
      if (v !== undefined && v !== false) checkMs(v, `options.deadlines.${key}`, false, ', or false for none');
    }
  }
  if (o.stream !== undefined && typeof o.stream !== 'boolean')
    throw new ConfigurationError('options.stream', 'must be a boolean');
  const schedule = readProp(o.scheduler, 'schedule');
  if (o.scheduler !== undefined && (typeof o.scheduler !== 'object' || typeof schedule !== 'function'))
    refuse('scheduler', 'must be an RxJS SchedulerLike');
  if (o.idGenerator !== undefined && typeof o.idGenerator !== 'function')
    throw new ConfigurationError('options.idGenerator', 'must be a function');
  if (o.random !== undefined && typeof o.random !== 'function')
    throw new ConfigurationError('options.random', 'must be a function returning [0, 1)');
  checkControl(o.control);
  if (o.telemetry !== undefined && typeof (o.telemetry as { open?: unknown } | null)?.open !== 'function')
    throw new ConfigurationError('options.telemetry', 'must be a RunTelemetry (with open(), e.g. withTelemetry())');
  if (o.trace !== undefined) checkTrace(o.trace);
  if (o.approvals !== undefined && o.approvals !== 'wait' && o.approvals !== 'suspend')
    refuse('approvals', `must be 'wait' or 'suspend' (got ${String(o.approvals)})`);
  if (o.budget !== undefined) checkBudget(o.budget);
  if (o.suspensionKey !== undefined) checkSuspensionKey(o.suspensionKey);
  if (o.frontendTools !== undefined) checkFrontendTools(o.frontendTools, 'options.frontendTools');
  return input as readonly Item[] | string;
}

/** A `suspensionKey`: a string or bytes of at least {@link MIN_SUSPENSION_KEY_BYTES}. */
function checkSuspensionKey(key: unknown): void {
  const rule = `must be a string or a Uint8Array of at least ${MIN_SUSPENSION_KEY_BYTES} bytes`;
  const refuse = (why: string): never => {
    throw new ConfigurationError('options.suspensionKey', why);
  };
  if (typeof key !== 'string' && !(key instanceof Uint8Array)) refuse(rule);
  else if (keyBytes(key) < MIN_SUSPENSION_KEY_BYTES) refuse(`${rule} (got ${keyBytes(key)})`);
}

/** The input: an array of Items (each read totally), or a `ConfigurationError` naming the bad one. */
function checkInput(input: unknown): void {
  let items: unknown[] | undefined;
  try {
    items = Array.isArray(input) ? [...(input as unknown[])] : undefined;
  } catch {
    throw new ConfigurationError('input', CANNOT_BE_READ);
  }
  if (items === undefined) throw new ConfigurationError('input', 'must be a string or an array of Items');
  items.forEach((item, i) => {
    let message: string | undefined;
    try {
      const parsed = ItemSchema.safeParse(item);
      message = parsed.success ? undefined : (parsed.error.issues[0]?.message ?? 'invalid Item');
    } catch {
      message = CANNOT_BE_READ;
    }
    if (message !== undefined) throw new ConfigurationError(`input[${i}]`, message);
  });
}

const OPTION_KEYS = [
  'cancel',
  'cancel$',
  'signal',
  'mailbox',
  'steer$',
  'session',
  'hooks',
  'retry',
  'deadlines',
  'stream',
  'scheduler',
  'idGenerator',
  'random',
  'telemetry',
  'control',
  'trace',
  'approvals',
  'budget',
  'suspensionKey',
  'frontendTools',
] as const;
const RETRY_KEYS = ['maxRetries', 'initialDelayMs', 'maxDelayMs', 'multiplier', 'maxRetryAfterMs'] as const;

/** `keys` of `obj`, each read once (totally) into a plain copy; `field` names `obj` in the error. */
function snapshot<T extends object>(obj: T, keys: readonly (keyof T & string)[], field: string): T {
  const copy: Partial<T> = {};
  for (const key of keys) copy[key] = read(obj, key, `${field}.${key}`);
  return copy as T;
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return typeof AbortSignal !== 'undefined' && isInstance(value, AbortSignal);
}

/** `options.replay` of `start()`: `'all'` (the default) or `'compact'`; anything else is a `ConfigurationError`. */
export function checkReplay(options: StartOptions<any>): ReplayMode {
  const replay = read<StartOptions<any>['replay']>(options, 'replay', 'options.replay') ?? 'all';
  if (replay !== 'all' && replay !== 'compact') {
    throw new ConfigurationError('options.replay', `must be 'all' or 'compact' (got ${String(replay)})`);
  }
  return replay;
}

/** The `trace` option: `{ traceparent, tracestate? }`, a valid W3C `traceparent` and a string `tracestate`. */
function checkTrace(trace: unknown): void {
  checkObject(trace, 'options.trace');
  const traceparent = read<unknown>(trace as object, 'traceparent', 'options.trace.traceparent');
  const tracestate = read<unknown>(trace as object, 'tracestate', 'options.trace.tracestate');
  if (parseTraceparent(traceparent) === undefined) {
    const why = 'must be a W3C traceparent (00-<trace id>-<span id>-<flags>)';
    throw new ConfigurationError('options.trace.traceparent', why);
  }
  if (tracestate !== undefined && typeof tracestate !== 'string')
    throw new ConfigurationError('options.trace.tracestate', 'must be a string');
}
