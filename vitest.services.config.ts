import { SERVICES_DIR, tierConfig } from './vitest.config.js';

/**
 * The queue fault specs, two files at a time, after the shared group: they kill, freeze or cut off BullMQ workers
 * (child processes under tsx) that hold their jobs' locks for `lockDurationMs: 2000`, and count what a peer does once
 * a lock lapses. A worker starved of CPU for longer would lose its lock on its own and change those counts, so they
 * do not share the machine with the browser and CLI specs; two of them at a time mostly wait on lock expiries. The
 * queue specs that kill no worker and count no lost one (approvals, cancel, guarantees, protocol, resume, threads,
 * trace, trust, the CLI's) run in the shared group.
 */
export const SERVICES_PAIRED = [
  'commit-outcome',
  'continue',
  'continue-checkpoints',
  'continue-fenced',
  'continue-steering-crashes',
  'control',
  'faults',
  'fencing',
  'redis-restart',
  'runs-contract',
  'steering',
].map((name) => `${SERVICES_DIR}/queue-${name}.test.ts`);

/**
 * The services specs that run one at a time, last (their own group): each bounds what it measures by a clock that
 * a second spec's CPU load would stretch, or is that load itself.
 *
 * - `queue-partition` and `queue-frozen-worker`: the margin between a worker's own cancel and its peer declaring it
 *   lost, and a SIGSTOPped worker's lost detection, both within `lockDurationMs`.
 * - `session-kill`: kills tens of session peer processes with SIGKILL mid-commit (most of the tier's CPU).
 * - `cli-sessions`: a second loopctl must start while the first one's answer (1.5 s a word) is still streaming.
 * - `cli-confinement-race`: a rename race run for a fixed number of rounds against a writer process.
 * - `web-queue-waiting`: a queue worker (4 s lock) killed under a page that must say so within its lost-detection
 *   time, and a cut proxy in front of Redis that the page must notice within seconds.
 */
export const SERVICES_ALONE = [
  `${SERVICES_DIR}/queue-partition.test.ts`,
  `${SERVICES_DIR}/queue-frozen-worker.test.ts`,
  `${SERVICES_DIR}/session-kill.test.ts`,
  `${SERVICES_DIR}/cli-sessions.test.ts`,
  `${SERVICES_DIR}/cli-confinement-race.test.ts`,
  `${SERVICES_DIR}/web-queue-waiting.test.ts`,
];

/**
 * `npm run test:services`: the specs that need local services (Postgres on 127.0.0.1:5432, Redis on
 * 127.0.0.1:6379), a browser or many processes. A missing service fails its spec with a one-line cause; nothing
 * here is skipped. Three projects, one after the other (`sequence.groupOrder`):
 *
 * - `services`: three files at a time. They mostly wait on their children, on Chromium or on a service, and share
 *   no state: each has its own Postgres schema, data folder, temp folders and browser profile, and no bound a
 *   slower machine would miss.
 * - `services-paired`: {@link SERVICES_PAIRED}, two files at a time.
 * - `services-alone`: {@link SERVICES_ALONE}, one file at a time, with the machine to themselves.
 */
export default tierConfig({
  maxWorkers: 3,
  projects: [
    {
      extends: true,
      test: {
        name: 'services',
        include: [`${SERVICES_DIR}/**/*.test.ts`],
        exclude: ['**/node_modules/**', ...SERVICES_PAIRED, ...SERVICES_ALONE],
        maxWorkers: 3,
        sequence: { groupOrder: 0 },
      },
    },
    {
      extends: true,
      test: {
        name: 'services-paired',
        include: SERVICES_PAIRED,
        maxWorkers: 2,
        sequence: { groupOrder: 1 },
      },
    },
    {
      extends: true,
      test: {
        name: 'services-alone',
        include: SERVICES_ALONE,
        maxWorkers: 1,
        sequence: { groupOrder: 2 },
      },
    },
  ],
});
