/**
 * loopctl/bullmq refuses bad options before it opens anything: a ConfigurationError naming the field (the
 * services specs run it against Redis).
 */
import { describe, expect, it } from 'vitest';
import { queueRuns, startWorker } from '../src/bullmq/index.js';
import { ConfigurationError } from '../src/index.js';

const field = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as ConfigurationError).field;
  }
  throw new Error('did not throw');
};

describe('queueRuns options', () => {
  it('names the bad field', () => {
    expect(field(() => queueRuns(null as never))).toBe('options');
    expect(field(() => queueRuns({ connection: 'http://x', queue: 'q' }))).toBe('options.connection');
    expect(field(() => queueRuns({ connection: 'not a url', queue: 'q' }))).toBe('options.connection');
    expect(field(() => queueRuns({ connection: 42 as never, queue: 'q' }))).toBe('options.connection');
    expect(field(() => queueRuns({ connection: 'redis://h', queue: 'a:b' }))).toBe('options.queue');
    expect(field(() => queueRuns({ connection: 'redis://h', queue: '' }))).toBe('options.queue');
    expect(field(() => queueRuns({ connection: 'redis://h', queue: 'q', prefix: 'x:y' }))).toBe('options.prefix');
    const h = { connection: 'redis://h', queue: 'q', insecure: true };
    expect(field(() => queueRuns({ ...h, sessions: {} as never }))).toBe('options.sessions.session');
    expect(field(() => queueRuns({ ...h, agents: 'a' as never }))).toBe('options.agents');
    expect(field(() => queueRuns({ ...h, steerTimeoutMs: 0 }))).toBe('options.steerTimeoutMs');
    expect(field(() => queueRuns({ connection: 'redis://h/x', queue: 'q' }))).toBe('options.connection');
  });
});

describe('the queue secret: queueRuns and startWorker refuse to start without one unless insecure: true', () => {
  const base = { connection: 'redis://h', queue: 'q' };
  it('queueRuns names options.secret: missing, too short, not a string or bytes; options.insecure beside one', () => {
    expect(field(() => queueRuns(base))).toBe('options.secret');
    expect(() => queueRuns(base)).toThrow(/openssl rand -hex 32/);
    expect(field(() => queueRuns({ ...base, secret: 'short' }))).toBe('options.secret');
    expect(field(() => queueRuns({ ...base, secret: new Uint8Array(31) }))).toBe('options.secret');
    expect(field(() => queueRuns({ ...base, secret: 42 as never }))).toBe('options.secret');
    expect(field(() => queueRuns({ ...base, secret: 'k'.repeat(32), insecure: true }))).toBe('options.insecure');
    expect(field(() => queueRuns({ ...base, insecure: 'yes' as never }))).toBe('options.insecure');
  });

  it('startWorker names options.secret the same way', async () => {
    const options = { connection: 'redis://127.0.0.1:1', queue: 'q', agents: {} };
    await expect(startWorker(options)).rejects.toMatchObject({ name: 'ConfigurationError', field: 'options.secret' });
    await expect(startWorker({ ...options, secret: 'x'.repeat(31) })).rejects.toMatchObject({
      field: 'options.secret',
      message: expect.stringContaining('got 31'),
    });
  });
});

describe("a worker's self-cancel deadline", () => {
  it('an eventStoreOutageMs not shorter than lockDurationMs is a ConfigurationError naming both', async () => {
    const options = { connection: 'redis://127.0.0.1:1', queue: 'q', agents: {}, insecure: true };
    for (const eventStoreOutageMs of [2000, 5000]) {
      await expect(startWorker({ ...options, lockDurationMs: 2000, eventStoreOutageMs })).rejects.toMatchObject({
        name: 'ConfigurationError',
        field: 'options.eventStoreOutageMs',
        message: expect.stringContaining('options.lockDurationMs (2000 ms'),
      });
    }
  });
});

describe("startWorker's onWorkerLost", () => {
  it("names the three values a bad one may be: 'fail', 'retry_once' or 'continue'", async () => {
    const options = { connection: 'redis://127.0.0.1:1', queue: 'q', agents: {}, insecure: true };
    await expect(startWorker({ ...options, onWorkerLost: 'continued' as never })).rejects.toMatchObject({
      name: 'ConfigurationError',
      field: 'options.onWorkerLost',
      message: expect.stringContaining("'fail', 'retry_once' or 'continue'"),
    });
  });
});

describe('startWorker options', () => {
  const ok = { connection: 'redis://127.0.0.1:1', queue: 'q', agents: {}, insecure: true };
  it.each([
    [{ ...ok, connection: 'ftp://x' }, 'options.connection'],
    [{ ...ok, queue: 'a:b' }, 'options.queue'],
    [{ ...ok, agents: null }, 'options.agents'],
    [{ ...ok, concurrency: 0 }, 'options.concurrency'],
    [{ ...ok, lockDurationMs: 1.5 }, 'options.lockDurationMs'],
    [{ ...ok, stalledIntervalMs: -1 }, 'options.stalledIntervalMs'],
    [{ ...ok, shutdownGraceMs: 'soon' }, 'options.shutdownGraceMs'],
    [{ ...ok, eventStoreOutageMs: -5 }, 'options.eventStoreOutageMs'],
    [{ ...ok, onWorkerLost: 'retry' }, 'options.onWorkerLost'],
    [{ ...ok, onWorkerLost: 'resume' }, 'options.onWorkerLost'],
    [{ ...ok, onRun: 'log' }, 'options.onRun'],
  ])('%# rejects naming %s', async (options, name) => {
    await expect(startWorker(options as never)).rejects.toMatchObject({ name: 'ConfigurationError', field: name });
  });
});
