/**
 * A worker process of `npm run bench -- queue`: `startWorker` of the measured build (bench/lib/loopctl.ts) with
 * an agent whose model reads the run's input: `hold` (one delta, then a stream that never ends), `cpu N` (N text
 * deltas at once, then the answer), `tick` (a 10 ms tool call per turn, for ever), `wait` (one 60 s tool call).
 * Argument: JSON `{ url, queue, prefix, concurrency, secret }` (the queue secret bench/queue.ts shares). Prints
 * `ready <id>`; on SIGTERM drains, prints `cpu <user+system µs>` of this process since it was ready, and exits 0.
 */
import { concat, defer, NEVER, of, type Observable } from 'rxjs';
import type * as Bull from '../../src/bullmq/index.js';
import type { ModelEvent, ModelProvider } from '../../src/index.js';
import { lib, loadEntry } from './loopctl.js';

const { url, queue, prefix, concurrency, secret } = JSON.parse(process.argv[2]!) as {
  url: string;
  queue: string;
  prefix: string;
  concurrency: number;
  secret: string;
};
const { startWorker } = (await loadEntry('bullmq/index')) as typeof Bull;

const text = (t: string): ModelEvent => ({ type: 'text_delta', delta: t });
const done = (t: string): ModelEvent => ({
  type: 'response',
  response: { text: t, toolCalls: [], finishReason: 'stop' },
});
const call = (ms: number): ModelEvent => ({
  type: 'response',
  response: {
    text: '',
    toolCalls: [{ callId: `c${Math.random()}`, name: 'wait', arguments: `{"ms":${ms}}` }],
    finishReason: 'tool_calls',
  },
});

const model: ModelProvider = {
  id: 'bench',
  stream: true,
  call(request): Observable<ModelEvent> {
    return defer(() => {
      const first = request.items.find((i) => i.type === 'user');
      const [word, n] = (first?.type === 'user' ? first.text : '').split(' ');
      switch (word) {
        case 'hold':
          return concat(of(text('x')), NEVER);
        case 'cpu': {
          const count = Number(n);
          const deltas = Array.from({ length: count }, (_, k) => text(`w${k} `));
          return of(...deltas, done('ok'));
        }
        case 'tick':
          return of(call(10));
        case 'wait':
          return request.items.some((i) => i.type === 'tool_result') ? of(done('ok')) : of(call(60_000));
        default:
          return of(done('ok'));
      }
    });
  },
};

const wait = lib.tool({
  name: 'wait',
  description: 'waits',
  parameters: { type: 'object', properties: { ms: { type: 'number' } }, required: ['ms'] },
  execute: (args, ctx) =>
    new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => resolve('ok'), Number(args['ms']));
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(t);
        reject(ctx.signal.reason);
      });
    }),
});
const agent = lib.defineAgent({ name: 'bench', instructions: '', model, tools: [wait], maxTurns: 1_000_000 });
const worker = await startWorker({ connection: url, queue, prefix, secret, agents: { bench: agent }, concurrency });
const cpu0 = process.cpuUsage(); // from ready to drained: the runs, not the process's start
process.stdout.write(`ready ${worker.id}\n`);
process.on('SIGTERM', () => {
  void worker.close().then(() => {
    const d = process.cpuUsage(cpu0);
    process.stdout.write(`cpu ${d.user + d.system}\n`);
    process.exit(0);
  });
});
