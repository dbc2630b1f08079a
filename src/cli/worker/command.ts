import type { CliOptions } from '../args.js';
import { budgetOption } from '../prices.js';
import { cliAgent, header } from '../agent.js';
import { selectModel } from '../model.js';
import { runDeadlines } from '../run-options.js';
import type { CliIO } from '../run-agent.js';
import { sanitizeLine } from '../sanitize.js';
import { firstStop } from '../first-stop.js';
import { exitCodeFor } from '../signals.js';
import { startWorker } from '../../bullmq/worker.js';
import { cliQueueName } from './queue-name.js';
import { checkRedis, redisDownLine } from './redis-check.js';
import { queueSecret } from './queue-secret.js';
import { runLine } from './run-line.js';

/**
 * `loopctl worker --queue redis://…`: a `loopctl/bullmq` worker serving the CLI's agent (the offline model
 * unless a provider's API key (`ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `OPENAI_API_KEY`, …) or `--base-url`
 * names a real one, the workspace tools of `--cwd`) for `loopctl serve
 * --queue` on the same Redis. Prints its id, then a line per run it claims and per run it ends (with its stop
 * reason in words), and runs jobs until a stop: the first SIGINT or SIGTERM drains
 * (no new job; runs may end within the grace, then are cancelled; every terminal event stored) and resolves
 * with 0; a second stop exits at once with the signal's code. Redis unreachable at the start: 1. No
 * `LOOPCTL_QUEUE_SECRET` (or one shorter than 32 bytes): 2, with the command that sets one.
 */
export async function runWorker(
  options: CliOptions,
  queue: string,
  env: NodeJS.ProcessEnv,
  io: CliIO,
): Promise<number> {
  const key = queueSecret(env, 'loopctl worker --queue');
  if ('line' in key) return (void io.stderr.write(key.line + '\n'), 2);
  const stop = firstStop(io);
  const { whenStopped } = stop;
  const name = cliQueueName(queue);
  const down = await Promise.race([checkRedis(queue), whenStopped.then(() => null)]);
  if (down === null) return exitCodeFor(stop.stopped()!);
  if (down !== undefined) {
    stop.exitOnNext();
    io.stderr.write(sanitizeLine(redisDownLine('loopctl worker', redacted(queue), down)) + '\n');
    return 1;
  }
  const model = await selectModel(options, env);
  try {
    const agent = cliAgent(options, model);
    const worker = await Promise.race([
      startWorker({
        connection: queue,
        queue: name,
        secret: key.secret,
        onRun: (note) => void io.stdout.write(sanitizeLine(runLine(note)) + '\n'),
        agents: { [agent.name]: agent },
        runOptions: { deadlines: runDeadlines(options), ...budgetOption(options, model) },
      }),
      whenStopped.then(() => undefined),
    ]);
    if (worker === undefined) return exitCodeFor(stop.stopped()!);
    io.stderr.write(`[loopctl worker] ${header(agent, options, model)}\n`);
    io.stdout.write(
      sanitizeLine(`loopctl worker ${worker.id}: taking runs from queue "${name}" on ${redacted(queue)}`) + '\n',
    );
    const signal = await whenStopped;
    io.stderr.write(
      sanitizeLine(`[loopctl worker] ${signal}: draining (no new runs; live runs end or are cancelled)`) + '\n',
    );
    await worker.close();
    io.stderr.write('[loopctl worker] drained: every run it had has its ending stored\n');
    return 0;
  } finally {
    stop.exitOnNext();
    await model.close();
  }
}

/** The URL without its password. */
export function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}
