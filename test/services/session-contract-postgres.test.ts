/** PostgresSessionStore passes the session contract on the local server, each test in its own schema. */
import { describe, expect, it } from 'vitest';
import { sessionContract } from '../../src/node/testing/index.js';
import { spawnPeer } from '../support/session-stores.js';
import { postgresFixture } from './support/postgres.js';

const { makeStore, tamper } = postgresFixture();

describe('PostgresSessionStore: the session contract', () => {
  sessionContract({ describe, it, expect }, makeStore, { spawnPeer, tamper });
});
