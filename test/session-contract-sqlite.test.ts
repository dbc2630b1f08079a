/**
 * SqliteSessionStore passes the session contract, each test on a new file, its cross-process parts with a
 * second process on the same file (the kill -9 part, many processes, is in the services tier).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sessionContract } from 'loopctl/node/testing';
import { sqliteStore, sqliteTamper, spawnPeer, tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-sqlite-contract-');
afterAll(() => dirs.removeAll());

describe('SqliteSessionStore: the session contract', () => {
  sessionContract({ describe, it, expect }, sqliteStore(dirs), { spawnPeer, tamper: sqliteTamper });
});
