/**
 * `LOOPCTL_OFFLINE_DELAY_MS` is checked like the other waits: a number of ms from 0 to 60 000 (a minute between two
 * words). A larger one was taken as it was and handed to `setTimeout`, which cannot wait past 2^31 - 1 ms: Node
 * printed its own `TimeoutOverflowWarning` on stderr at every word and waited 1 ms instead.
 */
import { describe, expect, it } from 'vitest';
import { parseCli } from '../src/cli/args.js';
import { selectModel } from '../src/cli/model.js';
import { UsageError } from '../src/cli/usage-error.js';

/** The offline model `selectModel` starts with `delay` as LOOPCTL_OFFLINE_DELAY_MS, closed; or what it threw. */
async function offlineWith(delay: string): Promise<string | Error> {
  const command = parseCli(['task'], {});
  if (command.kind !== 'run') throw new Error(`not a run: ${command.kind}`);
  try {
    const model = await selectModel(command.options, { LOOPCTL_OFFLINE_DELAY_MS: delay });
    await model.close();
    return model.provider.id;
  } catch (error) {
    return error as Error;
  }
}

describe('LOOPCTL_OFFLINE_DELAY_MS', () => {
  it('past a minute, or not a number of ms, is a usage error naming the variable and the value', async () => {
    for (const delay of ['60001', '1e12', '2147483648', 'Infinity', '-5', 'abc']) {
      const error = await offlineWith(delay);
      console.log(`LOOPCTL_OFFLINE_DELAY_MS=${delay}: ${String(error)}`);
      expect(error).toBeInstanceOf(UsageError);
      expect((error as Error).message).toBe(
        `LOOPCTL_OFFLINE_DELAY_MS must be a number of ms from 0 to 60000 (got ${JSON.stringify(delay)})`,
      );
    }
  });

  it('from 0 to 60000 starts the offline model', async () => {
    for (const delay of ['0', '15', '2.5', '60000']) expect(await offlineWith(delay)).toBe('openai:loopctl-offline');
  });
});
