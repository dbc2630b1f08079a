import type { Redis } from 'ioredis';
import type { Channels } from './channels.js';
import type { Keys } from './keys.js';

const TERMINAL = /"type":"(run_completed|run_cancelled|run_failed)"/;
/** How often the run's hash is also read, in case the published terminal was missed (ms). */
const POLL_MS = 500;

/**
 * Waits for a run's terminal event, from its event channel (listening before `ready` resolves) or its hash.
 * `type` resolves with the terminal event's type.
 */
export function waitTerminal(redis: Redis, channels: Channels, keys: Keys, runId: string) {
  let off: (() => void) | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let resolveType!: (type: string) => void;
  const type = new Promise<string>((resolve) => (resolveType = resolve));
  const check = () =>
    redis.hget(keys.run(runId), 'terminal').then(
      (t) => t && resolveType(t),
      () => undefined,
    );
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
