/**
 * localRuns passes the Runs contract: the ifBusy strategies it serves ('steer', 'reject'; the others are
 * NotSupportedError), its retention on a virtual clock (no real wait), and suspended runs with
 * `runOptions.approvals: 'suspend'`.
 */
import { describe, expect, it } from 'vitest';
import { localRuns } from 'loopctl';
import { RUNS_CONTRACT_AGENT, runsContract, runsContractAgent } from 'loopctl/node/testing';
import { virtualTime } from './support/virtual-time.js';

const RETAIN_MS = 60_000;
const agents = { [RUNS_CONTRACT_AGENT]: runsContractAgent() };
// One virtual clock for retention: its time moves only when the retention part advances it.
const clock = virtualTime();

describe('localRuns', () => {
  runsContract(
    { describe, it, expect },
    () => localRuns({ agents, retainFinishedMs: RETAIN_MS, scheduler: clock.scheduler }),
    {
      retention: { retainFinishedMs: RETAIN_MS, advance: (ms) => clock.advance(ms) },
      ifBusy: ['steer', 'reject'],
      suspending: () =>
        localRuns({
          agents,
          retainFinishedMs: RETAIN_MS,
          scheduler: clock.scheduler,
          runOptions: { approvals: 'suspend' },
        }),
    },
  );
});
