import { Redis, type RedisOptions } from 'ioredis';
import { ConfigurationError } from '../errors.js';

/**
 * Where Redis is: a `redis://` (or `rediss://`) URL, or ioredis options (`{ host, port, password, db, … }`).
 * loopctl opens its own connections from it (and BullMQ its own), with `maxRetriesPerRequest: null`, so a
 * command sent while Redis is unreachable waits for it to come back instead of failing.
 */
export type RedisConnection = string | RedisOptions;

/**
 * The ioredis options of `connection`; `field` names the option in errors.
 * @throws {ConfigurationError} for anything but a redis(s) URL or an options object.
 */
export function redisOptions(connection: unknown, field = 'connection'): RedisOptions {
  if (typeof connection === 'string') {
    let url: URL;
    try {
      url = new URL(connection);
    } catch {
      throw new ConfigurationError(field, `must be a redis:// URL (got ${JSON.stringify(connection)})`);
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new ConfigurationError(field, `must be a redis:// or rediss:// URL (got ${JSON.stringify(url.protocol)})`);
    }
    const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
    if (!Number.isInteger(db) || db < 0) throw new ConfigurationError(field, 'names a database that is not an integer');
    return {
      host: url.hostname || '127.0.0.1',
      port: url.port ? Number(url.port) : 6379,
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      db,
      ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    };
  }
  if (connection === null || typeof connection !== 'object' || Array.isArray(connection)) {
    throw new ConfigurationError(field, 'must be a redis:// URL or ioredis options');
  }
  return connection as RedisOptions;
}

/** A new ioredis client (the one BullMQ 5.81.5 bundles) whose commands wait while Redis is unreachable. */
export function openRedis(options: RedisOptions, name: string): Redis {
  const redis = new Redis({
    ...options,
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    enableAutoPipelining: true, // the commands of one tick (a burst of events) go out in one write
    connectionName: name,
    retryStrategy: (times) => Math.min(50 * times, 500),
  });
  redis.on('error', () => undefined); // reconnects on its own; the status is watched where it matters
  return redis;
}
