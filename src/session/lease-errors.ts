import { ConcurrentRunError } from '../errors.js';

/** The refusal every store gives while another run holds the lease ("one run per mailbox and session"). */
export function refusal(session: string, holder: string): ConcurrentRunError {
  return new ConcurrentRunError('options.session', `run ${holder} holds the lease on ${session}`);
}

/** What `renew` rejects with once the lease is gone: released, or expired and taken by another run. */
export function leaseLost(runId: string, session: string): ConcurrentRunError {
  return new ConcurrentRunError('options.session', `the lease of run ${runId} on ${session} was lost`);
}
