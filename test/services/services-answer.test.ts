/**
 * The services tier starts here: each service its specs need must answer on
 * 127.0.0.1. A service that does not answer fails with a one-line cause and the
 * command that starts it (as `.ci/run` does); it is never skipped. Later suites
 * that use a service add it to this list.
 */
import { describe, expect, it } from 'vitest';
import { postgresSelectOne, redisPing } from './support/probes.js';

const services: { name: string; start: string; check: () => Promise<unknown>; answer: unknown }[] = [
  {
    name: 'Postgres 127.0.0.1:5432 (user postgres, database test, trust auth)',
    start: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
    check: () => postgresSelectOne(),
    answer: '1',
  },
  {
    name: 'Redis 127.0.0.1:6379',
    start: 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no',
    check: () => redisPing(),
    answer: '+PONG',
  },
];

describe('the services the services tier needs answer', () => {
  for (const s of services) {
    it(s.name, async () => {
      const answer = await s.check().catch((err: unknown) => {
        throw new Error(`${(err as Error).message} (start it with: ${s.start})`);
      });
      expect(answer).toBe(s.answer);
    });
  }
});
