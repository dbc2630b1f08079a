/**
 * A queued resume's job tag (docs/scale-out.md, "Suspend mode through the queue"): the job's tag covers the
 * suspension and the decisions it carries, so a changed decision, a swapped suspension or a resume added to or
 * stripped from a job is refused by the worker's check; a job without a resume keeps the tag it had before.
 * Each purpose gets its own key from the queue secret.
 */
import { describe, expect, it } from 'vitest';
import { QueueAuth, QueueAuthError } from '../src/bullmq/auth.js';
import { checkJob, signJob, type RunJobData } from '../src/bullmq/shared.js';

const auth = QueueAuth.of({ secret: 'resume-job-spec-secret-0123456789abcdef' });
const base: RunJobData = { runId: 'r1', agent: 'helper', sessionId: 'alice/t', input: [] };
const resume = { suspended: { version: 1, suspensionId: 's1' }, decisions: { d1: { approve: true } } };

const refusal = (data: RunJobData) => {
  try {
    checkJob(auth, data.runId, data);
    return 'accepted';
  } catch (error) {
    return error instanceof QueueAuthError ? error.code : String(error);
  }
};

describe('the tag of a resume job', () => {
  it('covers the decisions and the suspension; a resume added or stripped is refused', () => {
    const job = signJob(auth, { ...base, resume });
    expect(refusal(job)).toBe('accepted');
    const rejected = { ...resume, decisions: { d1: { approve: false, reason: 'no' } } };
    expect(refusal({ ...job, resume: rejected })).toBe('mis_signed');
    expect(refusal({ ...job, resume: { ...resume, suspended: { version: 1, suspensionId: 's2' } } })).toBe(
      'mis_signed',
    );
    const { resume: _stripped, ...plain } = job;
    expect(refusal(plain)).toBe('mis_signed');
    const start = signJob(auth, base);
    expect(refusal({ ...start, resume })).toBe('mis_signed');
  });

  it('a job without a resume is tagged as before (its parts unchanged)', () => {
    const job = signJob(auth, base);
    expect(job.mac).toBe(auth.sign(['job', 'r1', 'helper', 'alice/t', [], null]));
  });

  it('derived keys differ by purpose and by secret, and are 32 bytes', () => {
    const other = QueueAuth.of({ secret: 'another-secret-of-enough-length-0123456789' });
    const a = auth.derive('suspension seal');
    expect(a).toHaveLength(32);
    expect(a.equals(auth.derive('something else'))).toBe(false);
    expect(a.equals(other.derive('suspension seal'))).toBe(false);
    expect(a.equals(auth.derive('suspension seal'))).toBe(true);
  });
});
