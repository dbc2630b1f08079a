/**
 * Helpers of the CLI tests (test/cli-*.test.ts): build once, run the bin as a
 * child process, poll for "it happened", inspect a process group.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './support/openai-server.js';

export { repoRoot };
/** The built bin as the package ships it: `dist/bin/loopctl.js`, the compiled CLI bundled by scripts/bundle-bin.mjs. */
export const BIN = path.join(repoRoot, 'dist/bin/loopctl.js');
const TSC = path.join(repoRoot, 'node_modules/typescript/bin/tsc');
const BUNDLE_BIN = path.join(repoRoot, 'scripts/bundle-bin.mjs');
/**
 * The build lock of this checkout (named after its folder): it guards this `dist/`, so builds of other checkouts on
 * the same machine (worktrees) never wait on it.
 */
const LOCK = path.join(
  tmpdir(),
  `loopctl-cli-test-build-${createHash('sha256').update(repoRoot).digest('hex').slice(0, 12)}.lock`,
);

/** The built web app (`loopctl serve` serves it). */
export const WEB_INDEX = path.join(repoRoot, 'dist/web/index.html');

/**
 * Builds `dist/` the way `npm run build` does (`tsc -b --noCheck`: emit only, and a no-op when up to date, as
 * it is after `npm run build`; `npm test`'s own tsc checks the types; then the bin's bundle, unless it is newer than
 * what tsc emitted), one test process at a time (a mkdir lock), so parallel test files never
 * write `dist/` together. With `web`, also the web app (`vite build` into
 * `dist/web`) when it is missing or older than a file of `src/web`, the Vite
 * config or the lockfile.
 */
export async function ensureBuilt(options: { web?: boolean } = {}): Promise<void> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      const age = Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 180_000) {
        try {
          rmdirSync(LOCK); // a crashed run's lock
        } catch {
          /* another process took it away first */
        }
      }
      await sleep(200);
    }
  }
  try {
    await promisify(execFile)(process.execPath, [TSC, '-b', 'tsconfig.build.json', '--noCheck'], { cwd: repoRoot });
    await promisify(execFile)(process.execPath, [BUNDLE_BIN, '--if-stale'], { cwd: repoRoot });
    if (options.web && webIsStale()) await promisify(execFile)(process.execPath, [VITE, 'build'], { cwd: repoRoot });
  } finally {
    rmdirSync(LOCK);
  }
}

const created: string[] = [];
let dataDir: string | undefined;

/**
 * The data folder CLI children save conversations in unless a test gives its own: a temp folder of this test
 * file (removed by {@link removeTempFolders}), never the real `~/.local/share/loopctl`.
 */
export function testDataDir(): string {
  if (dataDir === undefined || !existsSync(dataDir)) {
    dataDir = mkdtempSync(path.join(tmpdir(), 'loopctl-cli-data-'));
    created.push(dataDir);
  }
  return dataDir;
}

/**
 * The environment of a CLI child: no OpenAI settings, no npm variables, offline model at full speed, conversations
 * saved in {@link testDataDir} (`extra` may set another `LOOPCTL_DATA_DIR`).
 */
const VITE = path.join(repoRoot, 'node_modules/vite/bin/vite.js');

/** True when dist/web is missing or older than one of its inputs. */
function webIsStale(): boolean {
  const built = statSync(WEB_INDEX, { throwIfNoEntry: false })?.mtimeMs;
  if (built === undefined) return true;
  const web = readdirSync(path.join(repoRoot, 'src/web')).map((f) => `src/web/${f}`);
  // The page imports src/wording.ts (its words, shared with the CLI) and src/ag-ui/names.ts from outside src/web.
  const inputs = ['vite.config.ts', 'package-lock.json', 'src/ag-ui/names.ts', 'src/wording.ts', ...web];
  return inputs.some((f) => statSync(path.join(repoRoot, f)).mtimeMs > built);
}

/**
 * The environment of a CLI child: no provider settings (OpenAI, Anthropic, Gemini keys and endpoints), no npm
 * variables, offline model at full speed.
 */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // The queue secret `serve --queue` and `worker --queue` need (a spec of its absence deletes it).
  const base = {
    LOOPCTL_OFFLINE_DELAY_MS: '0',
    LOOPCTL_DATA_DIR: testDataDir(),
    LOOPCTL_QUEUE_SECRET: 'cli-specs-queue-secret-0123456789abcdef',
  };
  const env: NodeJS.ProcessEnv = { ...process.env, ...base, ...extra };
  for (const key of Object.keys(env)) {
    if (/^(OPENAI_|ANTHROPIC_|GEMINI_|npm_)/.test(key) || key === 'GOOGLE_API_KEY' || key === 'INIT_CWD')
      delete env[key];
  }
  return env;
}

/** A running CLI child with its output so far. */
export interface CliChild {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Writes `line` and a newline on the child's stdin (spawned with `stdin: 'pipe'`). */
  readonly send: (line: string) => void;
  /** Resolves with the exit code (or 128 + n for a death by signal n, as a shell reports it) and the whole output. */
  readonly done: Promise<{ code: number; stdout: string; stderr: string }>;
}

/**
 * How a CLI child is spawned: its folder, environment, and whether its stdin is a pipe the test writes to (default:
 * ignored).
 */
export interface SpawnOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv | undefined;
  readonly stdin?: 'pipe' | 'ignore';
}

/** Spawns `command args` and collects its output. */
export function spawnCli(command: string, args: readonly string[], options: SpawnOptions): CliChild {
  const stdio = [options.stdin ?? 'ignore', 'pipe', 'pipe'] as const;
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? cliEnv(), stdio: [...stdio] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const done = new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code: code ?? 128 + (signal ? constants.signals[signal] : 0), stdout: out, stderr: err }),
    );
  });
  const send = (line: string): void => {
    if (!child.stdin) throw new Error('spawnCli: stdin is not a pipe (pass stdin: "pipe")');
    child.stdin.write(`${line}\n`);
  };
  return { child, stdout: () => out, stderr: () => err, send, done };
}

/** Runs the built bin (`node dist/bin/loopctl.js …`) in `cwd`; `stdin: 'pipe'` lets the test type lines with `send`. */
export function runBin(
  args: readonly string[],
  cwd: string,
  env?: NodeJS.ProcessEnv,
  stdin: 'pipe' | 'ignore' = 'ignore',
): CliChild {
  return spawnCli(process.execPath, [BIN, ...args], { cwd, env, stdin });
}

/** How many times `pattern` occurs in `text`. */
export function occurrences(text: string, pattern: string | RegExp): number {
  if (typeof pattern === 'string') return text.split(pattern).length - 1;
  return text.match(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`))?.length ?? 0;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` every 20 ms until it is truthy; throws after `timeoutMs` (a generous "it happened" bound: a CLI child
 * on a loaded 2-core machine can take many seconds to start; the CLI specs' test timeout is 60 s).
 */
export async function waitFor<T>(what: string, check: () => T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Removes the folders {@link tempFolder} created (call it in `afterAll`). */
export function removeTempFolders(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Creates a temp folder holding `files` (relative path → content). */
export function tempFolder(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'loopctl-cli-'));
  created.push(dir);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), content);
  }
  return dir;
}

/** Pids of the live (not zombie) processes of process group `pgid` (Linux `/proc`). */
export function liveGroupMembers(pgid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') pids.push(Number(name));
  }
  return pids;
}

/**
 * True once process group `pgid` has no live member: `kill(-pgid, 0)` fails with ESRCH, or only zombies are left (not
 * yet reaped).
 */
export function groupGone(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
    throw error;
  }
  return liveGroupMembers(pgid).length === 0;
}

/** SIGKILLs what is left of process group `pgid` (test cleanup); a group already gone is ignored. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

/** Quotes `word` for /bin/sh. */
const shellQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** A CLI child on a pseudo-terminal (its stdin, stdout and stderr are all the terminal). */
export interface PtyChild {
  readonly child: ChildProcess;
  /** Everything the terminal showed so far, raw (stdout and stderr interleaved, `\r\n` line ends). */
  readonly raw: () => string;
  /** {@link raw} with `\r\n` as `\n` and other `\r`s dropped. */
  readonly screen: () => string;
  /** Types `text` on the terminal (`\r` is Enter, `\x03` is Ctrl-C). */
  readonly type: (text: string) => void;
  /** Resolves with the exit code (script's: the child's, or 128 + n for a death by signal n) and the whole output. */
  readonly done: Promise<{ code: number; raw: string; screen: string }>;
}

/**
 * Runs the built bin on a pseudo-terminal through util-linux `script -qec`
 * (120 columns), in `cwd`. Fails at once, naming the cause, where `script`
 * is missing: the terminal tests never skip.
 */
export function runBinInPty(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = cliEnv()): PtyChild {
  const words = [process.execPath, BIN, ...args].map(shellQuote);
  const command = ['stty cols 120 rows 40 2>/dev/null;', 'exec', ...words].join(' ');
  return runInPty(command, cwd, env);
}

/** Runs the shell `command` on a pseudo-terminal (see {@link runBinInPty}). */
export function runInPty(command: string, cwd: string, env: NodeJS.ProcessEnv = cliEnv()): PtyChild {
  const child = spawn('script', ['-qec', command, '/dev/null'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let raw = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (raw += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (raw += d));
  const screen = () => raw.replace(/\r\n/g, '\n').replace(/\r/g, '');
  const done = new Promise<{ code: number; raw: string; screen: string }>((resolve, reject) => {
    const cause = (error: Error) => new Error(`cannot run util-linux "script" for a pseudo-terminal: ${error.message}`);
    child.on('error', (error) => reject(cause(error)));
    child.on('close', (code, signal) => {
      resolve({ code: code ?? 128 + (signal ? constants.signals[signal] : 0), raw, screen: screen() });
    });
  });
  return { child, raw: () => raw, screen, type: (text) => void child.stdin!.write(text), done };
}
