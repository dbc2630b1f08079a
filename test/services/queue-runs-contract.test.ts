/**
 * queueRuns passes the Runs contract with 1 and with 2 worker processes (real Redis): every ifBusy strategy,
 * suspended runs (a queue whose worker runs with `approvals: 'suspend'`), lost runs (the run's worker
 * SIGKILLed, a new one started in its place), and time-based retention
 * (`retainFinishedMs` of the workers and of queueRuns, waited out in real time: Redis expires the keys).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueRuns } from '../../src/bullmq/index.js';
import { runsContract } from '../../src/node/testing/index.js';
import { QUEUE_SECRET, queueFixture, sleep, type QueueFixture, type WorkerProcess } from './support/queue.js';

const RETAIN_MS = 4_000;

for (const workers of [1, 2]) {
  describe(`queueRuns with ${workers} worker process${workers > 1 ? 'es' : ''}`, () => {
    let fx: QueueFixture;
    let suspending: QueueFixture;
    let pool: WorkerProcess[] = [];
    beforeAll(async () => {
      fx = queueFixture({ retainFinishedMs: RETAIN_MS });
      suspending = queueFixture({ retainFinishedMs: RETAIN_MS });
      const started = await Promise.all([
        ...Array.from({ length: workers }, () => fx.worker({ retainFinishedMs: RETAIN_MS })),
        suspending.worker({ retainFinishedMs: RETAIN_MS, suspend: true }),
      ]);
      pool = started.slice(0, workers);
    }, 60_000);
    /** SIGKILLs the worker that runs `runId` and starts another in its place (it, or the other, finds it lost). */
    const lose = async (runId: string) => {
      const owner = await fx.redis.hget(`${fx.prefix}:${fx.queue}:lc:run:${runId}`, 'owner');
      const dead = pool.find((w) => w.id === owner);
      if (dead === undefined) throw new Error(`no worker of this spec runs ${runId} (owner ${owner})`);
      dead.child.kill('SIGKILL');
      await dead.exited;
      pool = [...pool.filter((w) => w !== dead), await fx.worker({ retainFinishedMs: RETAIN_MS })];
    };
    afterAll(async () => {
      await fx?.cleanup();
      await suspending?.cleanup();
    });
    const runsOf = (f: () => QueueFixture) => () =>
      queueRuns({
        connection: f().url,
        queue: f().queue,
        prefix: f().prefix,
        retainFinishedMs: RETAIN_MS,
        steerTimeoutMs: 10_000,
        secret: QUEUE_SECRET,
      });

    runsContract(
      { describe, it, expect },
      runsOf(() => fx),
      {
        retention: { retainFinishedMs: RETAIN_MS, advance: sleep, slackMs: 1_000 },
        ifBusy: ['steer', 'reject', 'enqueue', 'interrupt', 'rollback'],
        suspending: runsOf(() => suspending),
        lose,
        eventsTimeoutMs: 20_000,
      },
    );
  });
}
