import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { checkProperty } from './support/check-property.js';
import { Observable, Subject, asapScheduler, config, map, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CancelSignal,
  Mailbox,
  MemorySession,
  ModelCallError,
  RunCancelledError,
  RunControl,
  RunEventSchema,
  defineAgent,
  run,
  tool,
  type Item,
  type MailboxToken,
  type RunEvent,
  type TerminalEvent,
} from '../src/index.js';
import { unpairedToolCalls } from '../src/items.js';
import { scriptedModel, type ScriptedStep } from '../src/testing/index.js';
import { useExactTimers } from './support/exact-timers.js';
import { otelHarness } from './support/otel.js';

/**
 * The guarantees of docs/cancellation.md as properties: random agents, tools, hooks, steering and
 * cancel moments, graceful stops, per-call cancels (of running calls and calls awaiting approval) and
 * approvals decided or expiring (docs/run-control.md), each run in virtual time
 * (TestScheduler run mode), then guarantees 1–9 and 11 checked, and the run's telemetry (loopctl/otel on an
 * in-memory SDK): every span ended exactly once, one run span that says how the run ended. FC_RUNS raises
 * the count; a failure prints its seed and path: replay with
 * FC_SEED=<seed> FC_PATH=<path> npx vitest run test/properties.test.ts
 */
const NUM_RUNS = Number(process.env.FC_RUNS ?? 2000);
/** Every tool's parameters: one schema object, converted to JSON Schema once (as an app's tools are). */
const PARAMS = z.object({ n: z.number() });
const TOOL_KINDS = ['fast', 'slow', 'ignore', 'throw', 'empty', 'selfcancel', 'hostile', 'gated'] as const;
const SOURCES = ['token', 'cancel$', 'signal', 'unsubscribe', 'deadline', 'tool', 'hook'] as const;

/**
 * Foreign values (a cancel reason, a tool's result or thrown value) that may be impossible to print: the
 * guarantees hold for them too. Made fresh per run; 'plain' is an ordinary string.
 */
const trapThrower = new Proxy(
  {},
  {
    get: () => () => {
      throw new Error('trap');
    },
  },
) as ProxyHandler<object>;
const HOSTILE = {
  plain: () => 'plain',
  toStringThrows: () => ({
    toString() {
      throw new Error('toString');
    },
  }),
  nullProtoBigInt: () => Object.assign(Object.create(null) as object, { n: 10n }),
  throwingProxy: () => new Proxy({}, trapThrower),
  revokedProxy: () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  },
  symbol: () => Symbol('hostile'),
  cyclic: () => {
    const o: Record<string, unknown> = { a: 1 };
    o['self'] = o;
    return o;
  },
  fn: () =>
    function secret() {
      return 'source';
    },
  bigint: () => 2n ** 70n,
  map: () => new Map<unknown, unknown>([['k', new Set([1n])]]),
} as const;
type HostileKind = keyof typeof HOSTILE;
const HOSTILE_KINDS = Object.keys(HOSTILE) as HostileKind[];

const stepArb = fc.record({
  deltas: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 }),
  calls: fc.array(fc.record({ kind: fc.constantFrom(...TOOL_KINDS), badArgs: fc.boolean() }), { maxLength: 3 }),
  delay: fc.integer({ min: 0, max: 3 }),
  fail: fc.constantFrom(undefined, undefined, undefined, 'retryable', 'fatal'),
});
const scenarioArb = fc.record({
  steps: fc.array(stepArb, { minLength: 1, maxLength: 4 }),
  parallel: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  hook: fc.constantFrom('none', 'deny', 'async'),
  pushes: fc.array(fc.record({ at: fc.nat(12), removeAt: fc.option(fc.nat(12), { nil: undefined }) }), {
    maxLength: 3,
  }),
  cancelAt: fc.option(fc.integer({ min: 0, max: 16 }), { nil: undefined }),
  source: fc.constantFrom(...SOURCES),
  maxTurns: fc.integer({ min: 1, max: 5 }),
  /** The cancel reason for the sources that carry one (token, cancel$, signal, tool, hook). */
  reason: fc.constantFrom(...HOSTILE_KINDS),
  /** What the 'hostile' tool returns (or throws, when `hostileThrows`). */
  hostileResult: fc.constantFrom(...HOSTILE_KINDS),
  hostileThrows: fc.boolean(),
  /** How a `t_gated` call (needsApproval) is decided, and how many frames after its tool_approval_requested. */
  approval: fc.record({
    decision: fc.constantFrom('approve', 'reject', 'none'),
    after: fc.nat(4),
  }),
  /** A graceful stop (docs/run-control.md): when, at which boundary, with or without graceMs. */
  stop: fc.option(
    fc.record({
      at: fc.integer({ min: 0, max: 16 }),
      boundary: fc.constantFrom('turn_end', 'tool_call_end'),
      graceMs: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
    }),
    { nil: undefined },
  ),
  /**
   * A per-call cancel: when, and which of the calls running or awaiting approval then (by index, modulo
   * their count).
   */
  cancelCall: fc.option(fc.record({ at: fc.integer({ min: 0, max: 16 }), pick: fc.nat(3) }), { nil: undefined }),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

/** One SDK for every random run, reset before each: content capture on, so hostile values are described too. */
const otel = otelHarness({ captureContent: { maxChars: 16 } });

interface Outcome {
  events: RunEvent[];
  log: string[];
  raisedAt?: { requests: number; executions: number; beforeTerminal: boolean };
  /** For a cancel raised from outside the engine: was the terminal delivered by the time cancel() returned? */
  settledInCancel?: boolean;
  final: { requests: number; executions: number };
  actionsAtTerminal: number;
  queuedAtTerminal: string[];
  pushed: { token: MailboxToken; removed: boolean }[];
  mailbox: Mailbox;
  session: MemorySession;
  initial: readonly Item[];
  caller: CancelSignal;
  controller: AbortController;
  listenersBefore: number;
  runEnded: TerminalEvent[];
  /** The cancel reason this run's source used. */
  reason: unknown;
  /** The run's Observable errored (it never may). */
  errored: boolean;
  /** Errors rxjs reported as unhandled during the run (none may be). */
  unhandled: unknown[];
  /** Every tool result text the model was sent. */
  toolOutputs: string[];
  /** Model requests and tool executions when the terminal event was delivered. */
  atTerminal: { requests: number; executions: number };
  /** What `control.stop()` answered, twice (a second stop is refused), and the frame it was taken at. */
  stopAnswers?: boolean[];
  stopTakenAt?: number;
  /** The per-call cancel: the call, what it answered, and whether its tool_call_failed was delivered before. */
  callCancel?: { callId: string; answered: boolean; settledBefore: boolean };
}

/** Runs {@link executeRun} with rxjs's unhandled errors collected into the outcome. */
function execute(s: Scenario): Outcome {
  const unhandled: unknown[] = [];
  const previous = config.onUnhandledError;
  config.onUnhandledError = (err) => void unhandled.push(err);
  try {
    return { ...executeRun(s), unhandled };
  } finally {
    config.onUnhandledError = previous;
  }
}

function executeRun(s: Scenario): Omit<Outcome, 'unhandled'> {
  otel.reset();
  const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
  let outcome!: Omit<Outcome, 'unhandled'>;
  ts.run(() => {
    useExactTimers(ts);
    const log: string[] = [];
    let executions = 0;
    let toolOwned = 0; // actions a signal-ignoring tool keeps scheduled (the tool's, not the run's)
    let harness = 0; // actions this harness scheduled
    const caller = new CancelSignal();
    const cancel$ = new Subject<unknown>();
    const reason = HOSTILE[s.reason]();
    const controller = new AbortController();
    const listenersBefore = getEventListeners(controller.signal, 'abort').length;
    let raisedAt: Outcome['raisedAt'];
    const steps: ScriptedStep[] = s.steps.map((st) => ({
      text: st.deltas,
      delayMs: st.delay,
      toolCalls: st.calls.map((c) => ({ name: `t_${c.kind}`, arguments: c.badArgs ? '{"n":' : { n: 1 } })),
      ...(st.fail
        ? {
            error: new ModelCallError(st.fail, {
              retryable: st.fail === 'retryable',
              status: st.fail === 'retryable' ? 503 : 400,
            }),
          }
        : {}),
    }));
    const model = scriptedModel(steps);
    const events: RunEvent[] = [];
    const done = () =>
      events.some((e) => e.type === 'run_completed' || e.type === 'run_cancelled' || e.type === 'run_failed');
    const note = () => (raisedAt ??= { requests: model.requests.length, executions, beforeTerminal: !done() });
    const mk = (kind: (typeof TOOL_KINDS)[number]) =>
      tool({
        name: `t_${kind}`,
        description: kind,
        parameters: PARAMS,
        ...(kind === 'gated' ? { needsApproval: true } : {}),
        execute: (_a, ctx): string | Observable<string> => {
          executions++;
          ctx.signal.addEventListener('abort', () => log.push(`abort:${ctx.callId}`), { once: true });
          switch (kind) {
            case 'fast':
              return 'fast';
            case 'slow':
              return timer(2).pipe(map(() => 'slow'));
            case 'ignore':
              return new Observable<string>((sub) => {
                toolOwned++;
                ts.schedule(() => (toolOwned--, sub.next('late'), sub.complete()), 3); // no teardown: it ignores cancel
              });
            case 'throw':
              throw new Error('boom');
            case 'empty':
              return new Observable<string>((sub) => sub.complete());
            case 'selfcancel':
              if (s.source === 'tool') {
                note();
                ctx.cancel.cancel(reason);
              }
              return 'self';
            case 'hostile': {
              const value = HOSTILE[s.hostileResult]();
              if (s.hostileThrows) throw value;
              return value as string;
            }
            case 'gated':
              return 'gated';
          }
        },
      });
    const agent = defineAgent({
      name: 'p',
      instructions: '',
      model,
      tools: TOOL_KINDS.map(mk),
      maxTurns: s.maxTurns,
      ...(s.parallel ? { parallelToolCalls: { maxConcurrency: s.parallel } } : {}),
    });
    const initial: Item[] = [{ type: 'user', id: 'old', text: 'earlier' }];
    const session = new MemorySession(initial);
    const mailbox = new Mailbox();
    let settledInCancel: boolean | undefined;
    let errored = false;
    const runEnded: TerminalEvent[] = [];
    let actionsAtTerminal = -1;
    let queuedAtTerminal: string[] = [];
    let atTerminal = { requests: -1, executions: -1 };
    const control = new RunControl();
    const approvalMs = 6; // 'none': no decision, the deadline rejects the call
    const sub = run(agent, 'go', {
      control,
      cancel: caller,
      cancel$,
      signal: controller.signal,
      mailbox,
      session,
      retry: { maxRetries: 1, initialDelayMs: 2 },
      random: () => 0.5,
      telemetry: otel.telemetry,
      deadlines: {
        approvalMs,
        ...(s.source === 'deadline' && s.cancelAt !== undefined ? { runMs: s.cancelAt + 1 } : {}),
      },
      hooks: {
        beforeToolCall: ({ call, cancel }) => {
          const hookCancels = s.source === 'hook' && s.cancelAt !== undefined && ts.now() >= s.cancelAt;
          if (hookCancels) {
            note();
            cancel.cancel(reason);
          }
          if (s.hook === 'deny' && call.name === 't_fast') return { deny: 'no fast tools' };
          if (s.hook === 'async') return timer(1).pipe(map(() => undefined));
          return undefined;
        },
        runEnded: ({ outcome }) => void (runEnded.push(outcome), log.push('runEnded')),
      },
    }).subscribe({
      error: () => void (errored = true),
      next: (e) => {
        events.push(e);
        if (e.type === 'tool_approval_requested' && s.approval.decision !== 'none') {
          const { callId } = e;
          later(s.approval.after, () =>
            s.approval.decision === 'approve' ? control.approve(callId) : control.reject(callId, 'no'),
          );
        }
        if (e.type === 'run_completed' || e.type === 'run_cancelled' || e.type === 'run_failed') {
          log.push('terminal');
          actionsAtTerminal = ts.actions.length - toolOwned - harness;
          queuedAtTerminal = mailbox.peek().map((t) => t.id);
          atTerminal = { requests: model.requests.length, executions };
        }
      },
    });
    const pushed: Outcome['pushed'] = [];
    const later = (at: number, fn: () => void) => {
      harness++;
      ts.schedule(() => (harness--, fn()), at);
    };
    for (const p of s.pushes) {
      later(p.at, () => {
        const entry = { token: mailbox.push(`steer@${p.at}`), removed: false };
        pushed.push(entry);
        if (p.removeAt !== undefined) later(p.removeAt, () => (entry.removed ||= mailbox.remove(entry.token)));
      });
    }
    if (s.cancelAt !== undefined && ['token', 'cancel$', 'signal', 'unsubscribe'].includes(s.source)) {
      later(s.cancelAt, () => {
        note();
        if (s.source === 'token') caller.cancel(reason);
        else if (s.source === 'cancel$') cancel$.next(reason);
        else if (s.source === 'signal') controller.abort(reason);
        else sub.unsubscribe();
        if (s.source !== 'unsubscribe' && raisedAt?.beforeTerminal) settledInCancel = done();
      });
    }
    let stopAnswers: boolean[] | undefined;
    let stopTakenAt: number | undefined;
    if (s.stop !== undefined) {
      const { at, boundary, graceMs } = s.stop;
      later(at, () => {
        const first = control.stop(graceMs === undefined ? { at: boundary } : { at: boundary, graceMs });
        if (first) stopTakenAt = ts.now();
        stopAnswers = [first, control.stop({ at: 'turn_end' })];
      });
    }
    let callCancel: Outcome['callCancel'];
    if (s.cancelCall !== undefined) {
      const { at, pick } = s.cancelCall;
      later(at, () => {
        // The calls cancelToolCall reaches: running ones and ones awaiting approval (requested, not started).
        const settled = new Set<string>();
        const open: string[] = [];
        for (const e of events) {
          if (e.type === 'tool_call_started' && !open.includes(e.callId)) open.push(e.callId);
          if (e.type === 'tool_approval_requested') open.push(e.callId);
          if (e.type === 'tool_call_completed' || e.type === 'tool_call_failed') settled.add(e.callId);
        }
        const running = open.filter((id) => !settled.has(id));
        const callId = running.length > 0 ? running[pick % running.length]! : 'no-such-call';
        const answered = control.cancelToolCall(callId, reason);
        const settledBefore = events.some((e) => e.type === 'tool_call_failed' && e.callId === callId && e.interrupted);
        callCancel = { callId, answered, settledBefore };
      });
    }
    ts.flush();
    outcome = {
      stopAnswers,
      stopTakenAt,
      callCancel,
      atTerminal,
      events,
      log,
      raisedAt,
      final: { requests: model.requests.length, executions },
      actionsAtTerminal,
      queuedAtTerminal,
      settledInCancel,
      pushed,
      mailbox,
      session,
      initial,
      caller,
      controller,
      listenersBefore,
      runEnded,
      reason,
      errored,
      toolOutputs: model.requests.flatMap((r) => r.items).flatMap((i) => (i.type === 'tool_result' ? [i.output] : [])),
    };
  });
  return outcome;
}

function check(s: Scenario, o: Outcome): void {
  const terminals = o.events.filter(
    (e) => e.type === 'run_completed' || e.type === 'run_cancelled' || e.type === 'run_failed',
  );
  const unsubscribed = s.source === 'unsubscribe' && o.raisedAt !== undefined && terminals.length === 0;
  // 1. exactly one terminal, the last event (none delivered after an unsubscribe), runEnded exactly once
  expect(o.runEnded).toHaveLength(1);
  if (!unsubscribed) {
    expect(terminals).toHaveLength(1);
    expect(o.events.at(-1)).toBe(terminals[0]);
    expect(o.runEnded[0]).toEqual(terminals[0]);
  }
  const terminal = o.runEnded[0]!;
  o.events.forEach((e, i) => expect(e.seq).toBe(i));
  // the wire schema: every event (and the terminal runEnded saw) parses, and parsing drops or changes nothing
  // The wire schemas accept every event unchanged. A cancel reason is the caller's own value, kept as given (`===`,
  // checked below): compared by identity, since a hostile one (a revoked Proxy) cannot be walked by toEqual.
  for (const e of [...o.events, terminal]) {
    const parsed = RunEventSchema.parse(e);
    if (parsed.type === 'run_cancelled' && e.type === 'run_cancelled') {
      expect(parsed.reason === e.reason).toBe(true);
      expect({ ...parsed, reason: null }).toEqual({ ...e, reason: null });
    } else expect(parsed).toEqual(e);
  }
  // 2 and 4. after a cancel was raised: nothing new starts; the run is cancelled (unless its outcome was already
  // decided)
  if (o.raisedAt?.beforeTerminal) expect(terminal.type).toBe('run_cancelled');
  // 3. latency: a cancel from outside has its terminal delivered before cancel() returns
  if (o.settledInCancel !== undefined) expect(o.settledInCancel).toBe(true);
  if (o.raisedAt && terminal.type === 'run_cancelled') {
    expect({ requests: o.final.requests, executions: o.final.executions }).toEqual({
      requests: o.raisedAt.requests,
      executions: o.raisedAt.executions,
    });
    expect(o.events.some((e) => e.type === 'retry_scheduled' && e.seq > terminal.seq)).toBe(false);
  }
  if (terminal.type === 'run_cancelled') expect(typeof terminal.phase).toBe('string');
  // 5 and 8. re-armed when the caller's token was the one seen; the library never fires the caller's tokens
  if (s.source !== 'token') expect(o.caller.isCancelled).toBe(false);
  if (s.source !== 'signal') expect(o.controller.signal.aborted).toBe(false);
  // (a stop's grace that cancelled the run first leaves a later caller cancel for the next run)
  const timedOut = terminal.type === 'run_cancelled' && isStopTimeout(terminal.reason);
  if (s.source === 'token' && terminal.type === 'run_cancelled' && !timedOut) expect(o.caller.isCancelled).toBe(false);
  // 6. scratchpad: only a completed run commits, once; others carry a consistent partial
  if (terminal.type === 'run_completed') {
    expect(o.session.writes).toBe(1);
  } else {
    expect(o.session.writes).toBe(0);
    expect(o.session.items).toEqual(o.initial);
    expect(unpairedToolCalls(terminal.partial)).toEqual([]);
  }
  // 7. steering: delivered exactly once, or back in the mailbox; withdrawn items never delivered
  const injected = o.events
    .filter((e) => e.type === 'user_message_injected')
    .map((e) => (e.type === 'user_message_injected' ? e.id : ''));
  expect(new Set(injected).size).toBe(injected.length);
  const queued = o.mailbox.peek().map((t) => t.id);
  for (const { token, removed } of o.pushed) {
    if (removed) {
      // withdrawn while queued: never delivered (it may have been seen by a run that did not complete)
      expect(terminal.type === 'run_completed' && injected.includes(token.id)).toBe(false);
      expect(queued).not.toContain(token.id);
      continue;
    }
    const delivered = terminal.type === 'run_completed' && injected.includes(token.id);
    expect(Number(delivered) + Number(queued.includes(token.id))).toBe(1);
  }
  if (!unsubscribed) expect(terminal.undelivered.map((u) => u.id)).toEqual(o.queuedAtTerminal);
  // 9. nothing of the run left: scheduled actions and listeners
  if (!unsubscribed) expect(o.actionsAtTerminal).toBe(0);
  expect(getEventListeners(o.controller.signal, 'abort').length).toBe(o.listenersBefore);
  // 11. cleanup started inner to outer, before the terminal event
  const ended = o.log.indexOf('runEnded');
  expect(o.log.slice(ended + 1).filter((l) => l.startsWith('abort:'))).toEqual([]);
  if (!unsubscribed) expect(o.log.indexOf('terminal')).toBe(ended + 1);
  // Foreign values: the Observable never errors, nothing is unhandled, every event is valid, the reason is
  // kept exactly as given and described totally, and a tool result never reaches the model as
  // "[object Object]" or as a function's source.
  expect(o.errored).toBe(false);
  expect(o.unhandled).toHaveLength(0);
  for (const e of o.events) RunEventSchema.parse(e);
  if (terminal.type === 'run_cancelled') {
    const carriesReason = ['token', 'cancel$', 'signal', 'tool', 'hook'].includes(s.source);
    if (o.raisedAt && carriesReason && !timedOut) expect(terminal.reason === o.reason).toBe(true);
    expect(typeof new RunCancelledError({ ...terminal }).message).toBe('string');
  }
  // Nothing starts once the terminal event is out, whatever ended the run (a stop's grace included).
  if (!unsubscribed) expect(o.final).toEqual(o.atTerminal);
  checkRunControl(s, o, terminal, timedOut);
  // Telemetry: every span ended exactly once, by the terminal event; one run span, the root of all of
  // them, saying how the run ended ("cancelled is not failed").
  expect(otel.endings()).toMatchObject({ open: [], twice: [] });
  const roots = otel.tree();
  expect(roots.map((r) => r.name)).toEqual(['invoke_agent p']);
  expect(otel.finished().length).toBe(otel.endings().started);
  const root = roots[0]!;
  expect(root.attributes['loopctl.stop_reason']).toBe(terminal.stopReason);
  expect(root.status === undefined).toBe(terminal.type !== 'run_failed');
  if (terminal.type === 'run_cancelled') expect(root.attributes['loopctl.cancel.phase']).toBe(terminal.phase);
  const partial = terminal.type === 'run_completed' ? [] : terminal.partial;
  for (const text of [...o.toolOutputs, ...partial.flatMap((i) => (i.type === 'tool_result' ? [i.output] : []))]) {
    expect(text).not.toContain('[object Object]');
    expect(text).not.toContain("return 'source'");
  }
}

/** `{ type: 'stop_timeout', graceMs }`, read totally (a cancel source's reason may be hostile). */
function isStopTimeout(reason: unknown): boolean {
  try {
    return typeof reason === 'object' && reason !== null && (reason as { type?: unknown }).type === 'stop_timeout';
  } catch {
    return false;
  }
}

/**
 * Graceful stop and per-call cancel (docs/run-control.md) under the same random schedules: a stop is taken
 * once; after it no turn starts (and under tool_call_end no call); a stopped run committed a paired history
 * and reports its last assistant text; a stop's grace cancels exactly graceMs after it; a per-call cancel
 * that answered true had delivered its interrupted tool_call_failed before returning, and that call never
 * completed.
 */
function checkRunControl(s: Scenario, o: Outcome, terminal: TerminalEvent, timedOut: boolean): void {
  const stops = o.events.filter((e) => e.type === 'stop_requested');
  expect(stops.length).toBe(o.stopTakenAt === undefined ? 0 : 1);
  if (o.stopAnswers) expect(o.stopAnswers[1]).toBe(false);
  const stop = stops[0];
  if (stop !== undefined && stop.type === 'stop_requested') {
    const after = o.events.filter((e) => e.seq > stop.seq);
    expect(after.some((e) => e.type === 'turn_started')).toBe(false);
    if (stop.stopAt === 'tool_call_end') expect(after.some((e) => e.type === 'tool_call_started')).toBe(false);
    const graceMs = s.stop?.graceMs;
    if (timedOut) expect(terminal.at - o.stopTakenAt!).toBe(graceMs);
    else if (graceMs !== undefined) expect(terminal.at - o.stopTakenAt!).toBeLessThanOrEqual(graceMs);
  } else {
    expect(timedOut).toBe(false);
  }
  if (terminal.type === 'run_completed') {
    expect(unpairedToolCalls(o.session.items)).toEqual([]);
    if (terminal.stopReason === 'stopped') {
      expect(stop).toBeDefined();
      const assistants = o.session.items.slice(o.initial.length).filter((i) => i.type === 'assistant');
      expect(terminal.output).toBe(assistants.at(-1)?.text ?? '');
    }
  }
  const cc = o.callCancel;
  if (cc?.answered) {
    expect(cc.settledBefore).toBe(true);
    expect(o.events.some((e) => e.type === 'tool_call_completed' && e.callId === cc.callId)).toBe(false);
    const failed = o.events.filter((e) => e.type === 'tool_call_failed' && e.callId === cc.callId);
    expect(failed).toMatchObject([{ interrupted: true, error: { name: 'ToolCallCancelledError' } }]);
  }
  if (cc !== undefined && cc.callId === 'no-such-call') expect(cc.answered).toBe(false);
}

describe('DESIGN.md §4 guarantees under random schedules', () => {
  it(`hold for ${NUM_RUNS} random runs`, () => {
    checkProperty(
      fc.property(scenarioArb, (s) => check(s, execute(s))),
      NUM_RUNS,
      'test/properties.test.ts',
    );
  }, 120_000);
});

describe('the virtual clock the properties run on', () => {
  /** Two timers due at frame 2; the first schedules an asap action that stops the second. */
  const scenario = (ts: TestScheduler, exact: boolean): string[] => {
    const log: string[] = [];
    ts.run(() => {
      if (exact) useExactTimers(ts);
      const second = new Subject<void>();
      timer(2).subscribe(() => {
        log.push('first');
        asapScheduler.schedule(() => (log.push('asap'), second.next()));
      });
      const sub = timer(2).subscribe(() => log.push('second'));
      second.subscribe(() => sub.unsubscribe());
    });
    return log;
  };

  it("rxjs's run-mode timers run the asap action in the second timer's slot, then throw", () => {
    const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
    expect(() => scenario(ts, false)).toThrow('Expected a due immediate or interval');
  });

  it('with useExactTimers each handle runs its own handler, expired timers before the immediate they set', () => {
    const ts = new TestScheduler((a, b) => expect(a).toEqual(b));
    expect(scenario(ts, true)).toEqual(['first', 'second', 'asap']);
  });
});
