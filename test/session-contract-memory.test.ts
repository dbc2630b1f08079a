/** MemorySessionStore passes the session contract; its cross-process parts are marked not applicable. */
import { describe, expect, it } from 'vitest';
import { MemorySessionStore } from 'loopctl';
import { sessionContract } from 'loopctl/node/testing';

describe('MemorySessionStore: the session contract', () => {
  sessionContract({ describe, it, expect }, () => new MemorySessionStore());
});
