import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration, type ViteUserConfig } from 'vitest/config';
import { LongestFirst } from './test/support/longest-first.js';

const src = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url));
const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * The folder of the second tier (`npm run test:services`): specs that need Postgres, Redis, a browser or many
 * processes.
 */
export const SERVICES_DIR = 'test/services';

/**
 * What both tiers share: the package names resolved to the sources, forks with `--expose-gc` (the leak specs),
 * and the JSON report CI asks for through `VITEST_JSON_REPORT` (to print its one-line "N passed, N failed"; with
 * projects, one report covers all of them). `maxWorkers` is set, not left to vitest's default (one worker less than
 * the cores: a single worker on 2 cores, which ran every spec file one after the other).
 */
export function tierConfig(test: {
  include?: string[];
  exclude?: string[];
  projects?: TestProjectInlineConfiguration[];
  maxWorkers?: number;
}): ViteUserConfig {
  const report = process.env['VITEST_JSON_REPORT'];
  return defineConfig({
    // Specs and examples import the package by name; resolve it to the sources.
    resolve: {
      alias: [
        { find: /^loopctl\/testing$/, replacement: src('testing/index.ts') },
        { find: /^loopctl\/node\/testing$/, replacement: src('node/testing/index.ts') },
        { find: /^loopctl\/sqlite$/, replacement: src('sqlite/index.ts') },
        { find: /^loopctl\/postgres$/, replacement: src('postgres/index.ts') },
        { find: /^loopctl\/node$/, replacement: src('node/index.ts') },
        { find: /^loopctl\/ag-ui$/, replacement: src('ag-ui/index.ts') },
        { find: /^loopctl\/http$/, replacement: src('http/index.ts') },
        { find: /^loopctl\/operators$/, replacement: src('operators/index.ts') },
        { find: /^loopctl\/otel$/, replacement: src('otel/index.ts') },
        { find: /^loopctl$/, replacement: src('index.ts') },
      ],
    },
    test: {
      ...(test.include ? { include: test.include } : {}),
      exclude: ['**/node_modules/**', ...(test.exclude ?? [])],
      ...(test.projects ? { projects: test.projects } : {}),
      ...(test.maxWorkers ? { maxWorkers: test.maxWorkers } : {}),
      // The type tests (test/**/*.test-d.ts) are checked by `tsc --noEmit -p .` (tsconfig.json includes test/), once;
      // vitest's own typecheck would run a second tsc over the same project.
      typecheck: { enabled: false },
      // loopctl/testing's matchers (toMatchLoopctlError), registered with expect.extend.
      setupFiles: ['./test/support/matchers-setup.ts'],
      pool: 'forks',
      testTimeout: 20_000,
      hookTimeout: 20_000,
      // PROF_DIR=/some/folder: every worker writes a V8 CPU profile there when it exits (`--cpu-prof`), to see
      // where a spec file's CPU time goes (e.g. the JSON Schema conversions the property sweep once repeated).
      execArgv: [
        '--expose-gc',
        ...(process.env['PROF_DIR'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['PROF_DIR']}`] : []),
      ],
      // The known-long spec files first (test/support/longest-first.ts), so the workers finish together.
      sequence: { sequencer: LongestFirst },
      reporters: report ? ['default', 'json'] : ['default'],
      outputFile: report ? { json: report } : undefined,
    },
  });
}

/** Every hermetic spec file (relative to the repository), outside {@link SERVICES_DIR}. */
function hermeticSpecs(): string[] {
  return ['test', 'marbles']
    .flatMap((dir) => readdirSync(`${root}${dir}`, { recursive: true, encoding: 'utf8' }).map((f) => `${dir}/${f}`))
    .filter((file) => file.endsWith('.test.ts') && !file.startsWith(`${SERVICES_DIR}/`));
}

/**
 * The rule of the `processes` project, by what a spec imports (so a new spec falls on the right side without a
 * list): it starts child processes, as it imports `node:child_process`, `cli-helpers` (the built CLI),
 * `mcp-everything-scenario` (the MCP server over stdio or HTTP) or `spawnPeer` (session peers).
 */
const STARTS_PROCESSES = [
  /from 'node:child_process'/,
  /from '[./]+\/(cli-helpers|mcp-everything-scenario)\.js'/,
  /import \{[^}]*\bspawnPeer\b[^}]*\} from/,
];

/**
 * The rule of the `isolated` project, by what a spec measures or changes (it wins over {@link STARTS_PROCESSES}):
 *
 * - it measures the whole process, which other spec files in a shared worker would disturb: forced garbage
 *   collection (`gc`, heap sizes), active handles (`getActiveResourcesInfo`: timers, sockets) or the process's own
 *   listeners (`process.listenerCount`);
 * - or it changes what a module is for the whole process: `vi.mock` (a module already loaded in a shared worker
 *   stays loaded) or `loadTokenizer` (once loaded, every OpenAI-family estimate in that process counts with it).
 */
const NEEDS_ITS_OWN_PROCESS = [
  /\(globalThis as \{ gc\?|memoryUsage\(|getActiveResourcesInfo\(|process\.listenerCount\(/,
  /\bvi\.mock\(|\bloadTokenizer\(/,
];
const matches = (file: string, markers: RegExp[]): boolean => {
  const text = readFileSync(`${root}${file}`, 'utf8');
  return markers.some((marker) => marker.test(text));
};

const specs = hermeticSpecs();
/** The `isolated` project's specs: a fresh worker per file, as every spec had before the split. */
export const ISOLATED_SPECS = specs.filter((file) => matches(file, NEEDS_ITS_OWN_PROCESS));
/** The `processes` project's specs: they start child processes, and need their own process for nothing else. */
export const PROCESS_SPECS = specs.filter((file) => !ISOLATED_SPECS.includes(file) && matches(file, STARTS_PROCESSES));
/**
 * The property sweeps: `unit` specs that import fast-check (hundreds to thousands of random runs each, about half of
 * the `unit` project's time). `npm run test:fast` (`--mode fast`) leaves them out; `npm test` runs them.
 */
export const PROPERTY_SPECS = specs.filter(
  (file) => !ISOLATED_SPECS.includes(file) && !PROCESS_SPECS.includes(file) && matches(file, [/from 'fast-check'/]),
);

/**
 * `npm test`'s vitest part: every hermetic spec (no network beyond 127.0.0.1 servers a spec starts, no services),
 * in three projects that run at the same time in one pool, the known-long files first (`LongestFirst`):
 *
 * - `processes` (see {@link STARTS_PROCESSES}): the specs that start child processes (the CLI, npm, MCP servers,
 *   shells, session peers). They take longest, and mostly wait on their children, beside the other specs. Their
 *   files share workers (`isolate: false`): a child process is a process of its own already, and a worker that
 *   starts afresh for each file imports vitest, the setup file and the sources again each time.
 * - `isolated` (see {@link NEEDS_ITS_OWN_PROCESS}): the specs that measure the whole process (heap, handles,
 *   listeners) or change a module for it, each file in a fresh worker.
 * - `unit`: everything else (virtual time, marbles, in-process servers on 127.0.0.1); `npm run test:fast`. Its
 *   files share workers (`isolate: false`): a worker imports the sources once instead of once per file, which was
 *   most of the suite's CPU time.
 *
 * A spec in a shared worker that changes process-wide state (rxjs `config`, OpenTelemetry globals, process
 * listeners, fake timers) restores it in its after hooks or a `finally`. Four workers on 2 cores: many specs spend
 * much of their time waiting on a child process or a socket.
 */
export default defineConfig(({ mode }) =>
  tierConfig({
    maxWorkers: 4,
    projects: [
      // 60 s bounds: a child process's start-up (node, tsx, npm) and a forced full GC are CPU work that a loaded
      // 2-core machine stretches many times over; bounds for a hang, not speed checks.
      {
        extends: true,
        test: { name: 'processes', include: PROCESS_SPECS, isolate: false, testTimeout: 60_000, hookTimeout: 60_000 },
      },
      {
        extends: true,
        test: { name: 'isolated', include: ISOLATED_SPECS, isolate: true, testTimeout: 60_000, hookTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts', 'marbles/**/*.test.ts'],
          exclude: [
            '**/node_modules/**',
            `${SERVICES_DIR}/**`,
            ...ISOLATED_SPECS,
            ...PROCESS_SPECS,
            // `npm run test:fast`: virtual-time, marble and in-process specs without the property sweeps.
            ...(mode === 'fast' ? PROPERTY_SPECS : []),
          ],
          isolate: false,
        },
      },
    ],
  }),
);
