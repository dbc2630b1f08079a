/**
 * kill -9 during a commit, many times, on SQLite and on Postgres: a peer process appends runs back to back and
 * is SIGKILLed at a random moment; the stored history holds only whole runs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sessionKillContract } from '../../src/node/testing/index.js';
import { spawnPeer, sqliteStore, tempDirs } from '../support/session-stores.js';
import { postgresFixture } from './support/postgres.js';

const dirs = tempDirs('loopctl-sqlite-kill-');
afterAll(() => dirs.removeAll());
const { makeStore } = postgresFixture();

describe('SqliteSessionStore', () => {
  sessionKillContract({ describe, it, expect }, sqliteStore(dirs), spawnPeer, { repetitions: 20 });
});

describe('PostgresSessionStore', () => {
  sessionKillContract({ describe, it, expect }, makeStore, spawnPeer, { repetitions: 10 });
});
