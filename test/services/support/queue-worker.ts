/**
 * A worker process for the queue specs: `node --import tsx queue-worker.ts '<json settings>'`. Starts
 * `startWorker` with the queue agent (./queue-agent.ts) and the Runs contract's agent, and the settings
 * (connection, queue, prefix, times, `pgSchema` for Postgres sessions, `suspend` for runs that suspend for
 * approval), prints `ready <workerId>` on stdout, a line per run note (`note claimed <runId> - <ms>`, `note ended
 * <runId> <stopReason> <ms>`, ms since the epoch), and on SIGTERM drains (`close()`) and exits 0.
 */
import pg from 'pg';
import { startWorker, type StartWorkerOptions } from '../../../src/bullmq/index.js';
import { PostgresSessionStore } from '../../../src/postgres/index.js';
import { RUNS_CONTRACT_AGENT, runsContractAgent } from '../../../src/node/testing/index.js';
import { queueAgent } from './queue-agent.js';

const settings = JSON.parse(process.argv[2] ?? '{}') as Omit<StartWorkerOptions, 'agents' | 'sessions'> & {
  pgSchema?: string;
  suspend?: boolean;
};
const pool = settings.pgSchema ? new pg.Pool({ max: 4 }) : undefined;
const sessions = pool ? new PostgresSessionStore(pool, { schema: settings.pgSchema! }) : undefined;
const { pgSchema: _schema, suspend, ...options } = settings;
const worker = await startWorker({
  ...options,
  agents: { [queueAgent.name]: queueAgent, [RUNS_CONTRACT_AGENT]: runsContractAgent() },
  ...(sessions ? { sessions } : {}),
  onRun: (n) =>
    void process.stdout.write(`note ${n.type} ${n.runId} ${n.type === 'ended' ? n.stopReason : '-'} ${Date.now()}\n`),
  runOptions: {
    retry: { maxRetries: 2, initialDelayMs: 10, maxDelayMs: 60_000, multiplier: 2, maxRetryAfterMs: 60_000 },
    ...(suspend ? { approvals: 'suspend' as const } : {}),
  },
});
process.stdout.write(`ready ${worker.id}\n`);
process.on('SIGTERM', () => {
  void worker.close().then(async () => {
    await pool?.end();
    process.stdout.write('drained\n');
    process.exit(0);
  });
});
