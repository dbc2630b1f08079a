/** MailboxUnavailableError (loopctl/bullmq steering whose worker did not answer) maps to HTTP 503 by its code. */
import { describe, expect, it } from 'vitest';
import { toHttpError } from '../src/http/http-error.js';
import { MailboxUnavailableError } from '../src/index.js';

describe('MailboxUnavailableError', () => {
  it('has the stable code mailbox_unavailable, and the handler answers 503 with it', () => {
    const error = new MailboxUnavailableError('r1', 2000);
    expect(error).toMatchObject({
      name: 'MailboxUnavailableError',
      code: 'mailbox_unavailable',
      runId: 'r1',
      timeoutMs: 2000,
    });
    expect(error.message).toBe('the mailbox of run "r1" did not answer within 2000 ms');
    const http = toHttpError(error);
    expect(http.status).toBe(503);
    expect(http.body).toEqual({ error: { code: 'mailbox_unavailable', message: error.message } });
  });
});
