import type { Redis, RedisOptions } from 'ioredis';
import { openRedis } from './connection.js';

/**
 * One Redis connection in subscriber mode shared by a process's listeners: several handlers may listen on one
 * channel (subscribed once, unsubscribed with the last). ioredis subscribes again by itself after a
 * reconnect; `onReconnect` callbacks then run, so readers fetch what they may have missed meanwhile.
 */
export class Channels {
  readonly #sub: Redis;
  readonly #handlers = new Map<string, Set<(message: string) => void>>();
  readonly #reconnected = new Set<() => void>();
  #readyOnce = false;

  constructor(options: RedisOptions, name: string) {
    this.#sub = openRedis(options, name);
    this.#sub.on('message', (channel: string, message: string) => {
      for (const handler of this.#handlers.get(channel) ?? []) handler(message);
    });
    this.#sub.on('ready', () => {
      if (this.#readyOnce) for (const callback of this.#reconnected) callback();
      this.#readyOnce = true;
    });
  }

  /** Calls `handler` with each message on `channel` from when the subscription is made (resolved) on. */
  async listen(channel: string, handler: (message: string) => void): Promise<() => void> {
    let set = this.#handlers.get(channel);
    const first = set === undefined;
    if (set === undefined) this.#handlers.set(channel, (set = new Set()));
    set.add(handler);
    if (first) await this.#sub.subscribe(channel);
    return () => {
      const current = this.#handlers.get(channel);
      if (current === undefined || !current.delete(handler) || current.size > 0) return;
      this.#handlers.delete(channel);
      this.#sub.unsubscribe(channel).catch(() => undefined);
    };
  }

  /** Calls `callback` each time the connection is ready again after it was lost. */
  onReconnect(callback: () => void): () => void {
    this.#reconnected.add(callback);
    return () => this.#reconnected.delete(callback);
  }

  close(): void {
    this.#handlers.clear();
    this.#sub.disconnect();
  }
}
