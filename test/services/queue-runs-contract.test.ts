/**
 * queueRuns passes the Runs contract with 1 and with 2 worker processes (real Redis): every ifBusy strategy,
 * suspended runs (a queue whose worker runs with `approvals: 'suspend'`), and time-based retention
 * (`retainFinishedMs` of the workers and of queueRuns, waited out in real time: Redis expires the keys).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueRuns } from '../../src/bullmq/index.js';
import { runsContract } from '../../src/node/testing/index.js';
import { queueFixture, sleep, type QueueFixture } from './support/queue.js';

const RETAIN_MS = 4_000;

for (const workers of [1, 2]) {
  describe(`queueRuns with ${workers} worker process${workers > 1 ? 'es' : ''}`, () => {
    let fx: QueueFixture;
    let suspending: QueueFixture;
    beforeAll(async () => {
      fx = queueFixture({ retainFinishedMs: RETAIN_MS });
      suspending = queueFixture({ retainFinishedMs: RETAIN_MS });
      await Promise.all([
        ...Array.from({ length: workers }, () => fx.worker({ retainFinishedMs: RETAIN_MS })),
        suspending.worker({ retainFinishedMs: RETAIN_MS, suspend: true }),
      ]);
    }, 60_000);
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
      });

    runsContract(
      { describe, it, expect },
      runsOf(() => fx),
      {
        retention: { retainFinishedMs: RETAIN_MS, advance: sleep, slackMs: 1_000 },
        ifBusy: ['steer', 'reject', 'enqueue', 'interrupt', 'rollback'],
        suspending: runsOf(() => suspending),
      },
    );
  });
}
