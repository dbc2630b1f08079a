/**
 * A worker process for the page's queue specs: `node --import tsx web-queue-worker.ts '<json settings>'` starts
 * `startWorker` with the agent `loopctl` (the one `loopctl serve --queue` starts) on the directive model of
 * ./queue-agent.ts (`!hold`: one chunk, then a stream that never ends), with the settings (connection, queue,
 * secret, times), and prints `ready <workerId>` on stdout.
 */
import { startWorker, type StartWorkerOptions } from '../../../src/bullmq/index.js';
import { defineAgent } from '../../../src/index.js';
import { directiveModel } from './queue-agent.js';

const settings = JSON.parse(process.argv[2] ?? '{}') as Omit<StartWorkerOptions, 'agents'>;
const loopctl = defineAgent({ name: 'loopctl', instructions: 'Answer.', model: directiveModel });
const worker = await startWorker({ ...settings, agents: { loopctl } });
process.stdout.write(`ready ${worker.id}\n`);
