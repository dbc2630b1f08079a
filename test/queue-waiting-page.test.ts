/**
 * A run that waits for a worker, and a queue that is not there, as loopctl/http and the page see them: the
 * event stream of a waiting run (`Runs.state` says `'waiting'`) answers at once with `Loopctl-Run-State: waiting`
 * and a comment; `QueueUnavailableError` is a 503 `queue_unavailable` in words; the page's SSE reader turns the
 * header into `waiting`, its state says "Waiting for a worker…" until the run starts, and shows the queue's
 * outage until a stream answers again. `QueueHealth` over a stand-in connection: its events decide.
 */
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { NEVER, Observable, Subject, lastValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  HEALTH_PING_MS,
  HEALTH_PING_TIMEOUT_MS,
  QueueHealth,
  QueueUnavailableError,
} from '../src/bullmq/queue-health.js';
import { createHandler } from '../src/http/index.js';
import { RunNotFoundError } from '../src/runs/errors.js';
import type { Runs } from '../src/runs/types.js';
import { sseFrames, type HttpEvent } from '../src/web/sse.js';
import { initialState, reduce, runActivity, type ChatState } from '../src/web/state.js';
import { statusWords } from '../src/web/wording.js';
import { bearer, listen, type Listening } from './support/http.js';

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Runs whose run `r1` waits for a worker (no event yet), and whose `state` answers `place()`. */
function waitingRuns(place: () => Promise<'waiting' | 'running' | 'ended'>): Runs {
  const no = () => Promise.reject(new Error('not used'));
  return {
    start: no,
    events: (runId) => (runId === 'r1' ? NEVER : new Observable((s) => s.error(new RunNotFoundError(runId)))),
    state: (runId) => (runId === 'r1' ? place() : Promise.reject(new RunNotFoundError(runId))),
    cancel: no,
    stop: no,
    steer: no,
    withdraw: no,
    decide: no,
    cancelToolCall: no,
  };
}

describe('loopctl/http: a run waiting for a worker, a queue that is not there', () => {
  it('the events of a waiting run answer at once: Loopctl-Run-State: waiting and a comment, the stream open', async () => {
    server = await listen(createHandler({ runs: waitingRuns(async () => 'waiting'), authorize: bearer }));
    const abort = new AbortController();
    const answer = await fetch(`${server.url}/runs/r1/events?threadId=t`, {
      headers: { authorization: 'Bearer alice' },
      signal: abort.signal,
    });
    expect([answer.status, answer.headers.get('loopctl-run-state'), answer.headers.get('loopctl-run-id')]).toEqual([
      200,
      'waiting',
      'r1',
    ]);
    const { value } = await answer.body!.getReader().read();
    expect(new TextDecoder().decode(value)).toBe(
      ': waiting for a worker: no worker has taken this run yet (cancel ends it at once)\n\n',
    );
    abort.abort();
  });

  it('QueueUnavailableError is a 503 queue_unavailable whose message says so in words; an unknown run stays 404', async () => {
    const down = () => Promise.reject(new QueueUnavailableError('127.0.0.1:6390', 'connect ECONNREFUSED'));
    server = await listen(createHandler({ runs: waitingRuns(down), authorize: bearer }));
    const answer = await fetch(`${server.url}/runs/r1/events?threadId=t`, { headers: { authorization: 'Bearer a' } });
    expect(answer.status).toBe(503);
    expect(await answer.json()).toEqual({
      error: {
        code: 'queue_unavailable',
        message: 'The queue is unavailable (Redis at 127.0.0.1:6390: connect ECONNREFUSED). Try again once it answers.',
      },
    });
    const unknown = await fetch(`${server.url}/runs/r2/events?threadId=t`, { headers: { authorization: 'Bearer a' } });
    expect(unknown.status).toBe(404);
  });
});

describe('the page: waiting for a worker, the queue unavailable', () => {
  const headers = (extra: Record<string, string>): HttpEvent =>
    ({
      type: 'headers',
      status: 200,
      headers: new Headers({ 'Content-Type': 'text/event-stream', 'Loopctl-Run-Id': 'r1', ...extra }),
    }) as HttpEvent;
  const read = (events: HttpEvent[]) =>
    lastValueFrom(
      new Observable<HttpEvent>((s) => {
        events.forEach((e) => s.next(e));
        s.complete();
      }).pipe(sseFrames(), toArray()),
    );

  it('the SSE reader gives waiting after the run id when the header says so, and only then', async () => {
    expect(await read([headers({ 'Loopctl-Run-State': 'waiting' })])).toEqual([
      { kind: 'run', runId: 'r1' },
      { kind: 'waiting' },
    ]);
    expect(await read([headers({})])).toEqual([{ kind: 'run', runId: 'r1' }]);
  });

  it('"Waiting for a worker…" with the run id known (Stop works) until RUN_STARTED; then "Thinking…"', () => {
    let state: ChatState = reduce(initialState('t'), { type: 'send', id: 'u1', text: 'hi' });
    state = reduce(reduce(state, { type: 'run', runId: 'r1' }), { type: 'waiting' });
    expect(statusWords(runActivity(state.run!, state.entries))).toBe('Waiting for a worker…');
    expect(state.run!.runId).toBe('r1');
    const started = { type: 'RUN_STARTED', threadId: 't', runId: 'r1' } as const;
    state = reduce(state, { type: 'frame', id: '0', event: started as never });
    expect(state.run!.waiting).toBeUndefined();
    expect(statusWords(runActivity(state.run!, state.entries))).toBe('Thinking…');
  });

  it("the queue's outage is shown until a stream answers again; a new message or a lost run clears it", () => {
    let state: ChatState = reduce(initialState('t'), { type: 'send', id: 'u1', text: 'hi' });
    const words =
      'The queue is unavailable (Redis at 127.0.0.1:6379: connect ECONNREFUSED). Try again once it answers.';
    state = reduce(state, { type: 'unavailable', notice: words });
    expect(state.unavailable).toBe(words);
    expect(reduce(state, { type: 'run', runId: 'r1' }).unavailable).toBeUndefined();
    expect(reduce(state, { type: 'lost', notice: 'gone' }).unavailable).toBeUndefined();
    const answered = reduce(state, { type: 'queue', workers: 0, start: 'loopctl worker --queue redis://h:6379' });
    expect([answered.unavailable, answered.queue]).toEqual([
      undefined,
      { workers: 0, start: 'loopctl worker --queue redis://h:6379' },
    ]);
  });
});

describe('QueueHealth', () => {
  /** A stand-in for an ioredis client: its events are emitted by the spec; never `ready`, so it is not pinged. */
  const fakeRedis = () => Object.assign(new EventEmitter(), { status: 'connecting' }) as unknown as Redis;

  it('a closed connection is unavailable with its last error, until it is ready again; guard says so', async () => {
    const redis = fakeRedis();
    const health = new QueueHealth(redis, '127.0.0.1:6379');
    try {
      expect(health.down).toBeUndefined();
      const pending = new Subject<number>();
      const guarded = health.guard(() => lastValueFrom(pending));
      redis.emit('error', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
      redis.emit('close');
      const words =
        'The queue is unavailable (Redis at 127.0.0.1:6379: connect ECONNREFUSED 127.0.0.1:6379). ' +
        'Try again once it answers.';
      expect(health.down).toBe('connect ECONNREFUSED 127.0.0.1:6379');
      await expect(guarded).rejects.toThrow(words);
      expect(() => health.check()).toThrow(QueueUnavailableError);
      await expect(health.guard(() => Promise.resolve(1))).rejects.toMatchObject({ code: 'queue_unavailable' });
      redis.emit('ready');
      expect(health.down).toBeUndefined();
      expect(await health.guard(() => Promise.resolve(2))).toBe(2);
    } finally {
      health.close();
    }
  });

  it('a connection that stays open but does not answer a PING is unavailable once the PING is late; then back', async () => {
    vi.useFakeTimers();
    const redis = Object.assign(new EventEmitter(), { status: 'ready' }) as unknown as Redis & { ping: () => unknown };
    let answer: (() => void) | undefined;
    (redis as { ping: () => Promise<string> }).ping = () => new Promise((resolve) => (answer = () => resolve('PONG')));
    const health = new QueueHealth(redis, '127.0.0.1:6379');
    try {
      await vi.advanceTimersByTimeAsync(HEALTH_PING_MS); // the PING is sent
      await vi.advanceTimersByTimeAsync(HEALTH_PING_TIMEOUT_MS - 1);
      expect(health.down).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(health.down).toBe('it did not answer a PING within 2 s');
      answer!(); // the late answer does not count; the next PING answered does
      await vi.advanceTimersByTimeAsync(HEALTH_PING_MS);
      answer!();
      await vi.advanceTimersByTimeAsync(0);
      expect(health.down).toBeUndefined();
    } finally {
      health.close();
      vi.useRealTimers();
    }
  });
});
