import type { Redis } from 'ioredis';
import type { Channels } from './channels.js';
import type { Keys } from './keys.js';
import { VANISHED_RUN_MS } from './read-events.js';

const TERMINAL = /"type":"(run_completed|run_cancelled|run_failed)"/;
/** How often the run's hash is also read, in case the published terminal was missed (ms). */
const POLL_MS = 500;

/**
 * Waits for a run's terminal event, from its event channel (listening before `ready` resolves) or its hash.
 * `type` resolves with the terminal event's type, or `'gone'` when the run's hash stayed gone (Redis lost its
 * keys) for `VANISHED_RUN_MS` with no terminal.
 */
export function waitTerminal(redis: Redis, channels: Channels, keys: Keys, runId: string) {
  let off: (() => void) | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let resolveType!: (type: string) => void;
  const type = new Promise<string>((resolve) => (resolveType = resolve));
  let vanishedAt: number | undefined;
  const check = () =>
    redis
      .hget(keys.run(runId), 'terminal')
      .then(
        async (t) => {
          if (t) return resolveType(t);
          if ((await redis.exists(keys.run(runId))) === 1) return void (vanishedAt = undefined);
          vanishedAt ??= Date.now();
          if (Date.now() - vanishedAt >= VANISHED_RUN_MS) resolveType('gone');
        },
        () => undefined,
      )
      .catch(() => undefined);
  const ready = channels
    .listen(keys.eventChannel(runId), (message) => {
      const match = TERMINAL.exec(message.slice(message.indexOf('\n') + 1, message.indexOf('\n') + 40));
      if (match) resolveType(match[1]!);
    })
    .then((unlisten) => {
      off = unlisten;
      timer = setInterval(check, POLL_MS);
      void check();
    });
  return {
    ready,
    type,
    close() {
      off?.();
      clearInterval(timer);
    },
  };
}
