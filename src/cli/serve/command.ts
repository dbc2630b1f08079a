import { createServer, type Server } from 'node:http';
import { budgetOption } from '../prices.js';
import type { AddressInfo } from 'node:net';
import { localRuns } from '../../runs/local-runs.js';
import type { CliOptions } from '../args.js';
import { header } from '../agent.js';
import { serveAgents } from './agents.js';
import { selectModel } from '../model.js';
import { runDeadlines } from '../run-options.js';
import type { CliIO } from '../run-agent.js';
import { sanitizeLine } from '../sanitize.js';
import { firstStop } from '../first-stop.js';
import { exitCodeFor } from '../signals.js';
import { newToken } from './guard.js';
import { createServeApp } from './server.js';
import { defaultWebRoot, loadWebApp } from './static.js';
import { INSTALL_BULLMQ, isMissingBullmq } from '../worker/load.js';

/** How long the shutdown waits for open streams to carry their runs' cancelled ending before it closes them. */
const DRAIN_MS = 2000;

/** What {@link runServe} needs besides the CLI's options. */
export interface ServeSettings {
  readonly port: number;
  /** The built web app's folder (default: the package's `dist/web`). */
  readonly webRoot?: string;
  /** The package version, for `GET /api/info`. */
  readonly version: string;
  /**
   * `--queue redis://…`: runs go to `loopctl worker` processes on that Redis (loopctl/bullmq `queueRuns`) instead
   * of running in this process; a stop then leaves them running there (the pages re-attach).
   */
  readonly queue?: string;
}

/**
 * `loopctl serve [--port N] [--confirm]`: the web app and loopctl/http on 127.0.0.1, with the CLI's model (the
 * offline model by default) and tools; with `--confirm`, write_file and run_shell calls wait for Approve or
 * Reject in the page (`loopctl.approval_requested`, decided through the decision route). Without it, the page's
 * setting may ask for the same by starting runs of the asking agent (./agents.ts); it cannot ask for less.
 * Prints the address with the launch's token on stdout, the model line on stderr, and serves until a stop:
 * the first SIGINT or SIGTERM cancels every live run (each ends `run_cancelled` with the signal as its reason,
 * which its open streams carry to the pages), closes the server and resolves with 130 or 143; a second stop
 * exits at once. A port in use (or refused) resolves with 2 and a line naming the port; a web app that is not
 * built with 1.
 * With `--queue`, no `LOOPCTL_QUEUE_SECRET` (or one shorter than 32 bytes) resolves with 2 and a line showing
 * the command that sets one.
 */
export async function runServe(
  options: CliOptions,
  settings: ServeSettings,
  env: NodeJS.ProcessEnv,
  io: CliIO,
): Promise<number> {
  const key = settings.queue ? await loadQueueSecret(env) : undefined;
  if (key !== undefined && 'line' in key) return (void io.stderr.write(key.line + '\n'), 2);
  const stop = firstStop(io);
  const { whenStopped } = stop;
  let web;
  try {
    web = loadWebApp(settings.webRoot ?? defaultWebRoot());
  } catch (error) {
    io.stderr.write(`loopctl: ${(error as Error).message}\n`);
    return 1;
  }
  const model = await selectModel(options, env);
  try {
    const stopped = stop.stopped();
    if (stopped !== undefined) return exitCodeFor(stopped);
    const { main: agent, asking } = serveAgents(options, model);
    const shutdown = new AbortController();
    const queued = settings.queue ? await openQueueRuns(settings.queue, agent.name, key!.secret) : undefined;
    if (queued !== undefined && 'missing' in queued) {
      io.stderr.write(`loopctl: ${queued.missing}\n`);
      return 2;
    }
    if (queued !== undefined) {
      const down = await Promise.race([queued.check(), whenStopped.then(() => null)]);
      if (down !== undefined) await queued.runs.close().catch(() => undefined);
      if (down === null) return exitCodeFor(stop.stopped()!);
      if (down !== undefined) {
        io.stderr.write(sanitizeLine(queued.downLine(down)) + '\n');
        return 1;
      }
    }
    const runs =
      queued?.runs ??
      localRuns({
        agents: { [agent.name]: agent, ...(asking ? { [asking.name]: asking } : {}) },
        runOptions: { signal: shutdown.signal, deadlines: serveDeadlines(options), ...budgetOption(options, model) },
      });
    const token = newToken();
    const info = {
      agent: agent.name,
      // With --queue the workers run the runs with their own model: the page names the queue's workers instead.
      model: queued === undefined ? model.label : `loopctl worker processes (queue "${queued.name}")`,
      folder: options.cwd,
      tools: agent.tools.map((t) => t.name),
      version: settings.version,
      confirm: options.confirm,
      // With --queue the workers run only the main agent: the page's setting is not offered.
      ...(asking && queued === undefined ? { askingAgent: asking.name } : {}),
      ...(queued !== undefined ? { queue: queued.name } : {}),
    };
    const queue =
      queued === undefined
        ? undefined
        : async () => ({
            name: queued.name,
            workers: await queued.runs.workers(),
            start: `loopctl worker --queue ${queued.shown}`,
          });
    let port = settings.port;
    const server = createServer(
      createServeApp({ runs, web, info, token, port: () => port, ...(queue ? { queue } : {}) }),
    );
    const refused = await listen(server, settings.port);
    if (refused !== undefined) {
      const why = refused === 'EADDRINUSE' ? 'is in use' : `cannot be used (${refused})`;
      io.stderr.write(`loopctl: port ${settings.port} on 127.0.0.1 ${why}; choose another with --port\n`);
      return 2;
    }
    port = (server.address() as AddressInfo).port;
    if (queued === undefined) io.stderr.write(`[loopctl serve] ${header(agent, options, model)}\n`);
    else io.stderr.write(sanitizeLine(await queueLine(queued.runs, queued.name, queued.shown, agent.name)) + '\n');
    io.stdout.write(`loopctl serve: open http://127.0.0.1:${port}/?token=${token}\n`);
    io.stderr.write('[loopctl serve] Ctrl-C stops the server and cancels the runs it has going\n');
    const signal = await whenStopped;
    io.stderr.write(sanitizeLine(`[loopctl serve] ${signal}: cancelling the live runs, closing the server`) + '\n');
    shutdown.abort(signal); // every live run ends run_cancelled (reason: the signal); its streams carry it out
    // With --queue the runs go on on their workers: no ending to carry to the pages, so nothing to wait for.
    await close(server, queued === undefined ? DRAIN_MS : 0);
    await queued?.runs.close(); // queued runs go on on their workers
    return exitCodeFor(signal);
  } finally {
    stop.exitOnNext(); // closing the model: a stop now exits at once
    await model.close();
  }
}

/**
 * The deadlines of a served run: the CLI's, and no approval deadline (as in the terminal with `--confirm`, the
 * question waits for the person: the page shows it until Approve, Reject or Stop). Only the asking agents'
 * runs (`--confirm`, or the page's setting) ever wait for approval.
 */
function serveDeadlines(options: CliOptions) {
  return { ...runDeadlines(options), approvalMs: false as const };
}

/** Listens on 127.0.0.1:`port`; resolves with the error code when the port cannot be had. */
function listen(server: Server, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const failed = (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message);
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', failed);
      resolve(undefined);
    });
  });
}

/** Stops accepting, lets the streams end with their runs, then closes whatever is left after `drainMs`. */
function close(server: Server, drainMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), drainMs);
    // A stream that carried its run's end leaves a kept-alive connection behind: close those as they go idle.
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearTimeout(timer);
      clearInterval(idle);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/**
 * What `serve --queue` says where its runs go: the queue, its URL (no password), the agent, and how many
 * `loopctl worker` processes take runs now (each runs them with its own model, tools and folder, which it
 * prints when it starts; serve's own model is not used).
 */
async function queueLine(
  runs: { workers(): Promise<number> },
  name: string,
  shown: string,
  agent: string,
): Promise<string> {
  const asked = runs.workers().catch(() => undefined);
  const late = new Promise<undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), 2000);
    void asked.then(() => clearTimeout(timer));
  });
  const count = await Promise.race([asked, late]);
  const workers =
    count === undefined
      ? ''
      : count === 0
        ? `; none is taking runs yet: start one with \`loopctl worker --queue ${shown}\``
        : `; ${count} ${count === 1 ? 'is' : 'are'} taking runs now`;
  return (
    `[loopctl serve] runs go to queue "${name}" on ${shown}: \`loopctl worker\` processes run them ` +
    `(agent ${agent}, each with its own model, tools and folder)${workers}`
  );
}

/** The queue secret of `env`, or the line serve exits 2 with (./../worker/queue-secret.ts). */
async function loadQueueSecret(env: NodeJS.ProcessEnv) {
  const { queueSecret } = await import('../worker/queue-secret.js');
  return queueSecret(env, 'loopctl serve --queue');
}

/** `queueRuns` on `url` for the CLI's agent, loaded only now (bullmq is an optional peer dependency). */
async function openQueueRuns(url: string, agent: string, secret: string) {
  try {
    const { queueRuns } = await import('../../bullmq/queue-runs.js');
    const { cliQueueName } = await import('../worker/queue-name.js');
    const { checkRedis, redisDownLine } = await import('../worker/redis-check.js');
    const { redacted } = await import('../worker/command.js');
    const name = cliQueueName(url);
    const runs = queueRuns({ connection: url, queue: name, agents: [agent], secret });
    const shown = redacted(url);
    const downLine = (cause: string) => redisDownLine('loopctl serve --queue', shown, cause);
    return { runs, name, shown, check: () => checkRedis(url), downLine };
  } catch (error) {
    if (!isMissingBullmq(error)) throw error;
    return { missing: `loopctl serve --queue needs bullmq (not installed): ${INSTALL_BULLMQ}` };
  }
}
