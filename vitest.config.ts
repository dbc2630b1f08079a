import { fileURLToPath } from 'node:url';
import { defineConfig, type ViteUserConfig } from 'vitest/config';

const src = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url));

/**
 * The folder of the second tier (`npm run test:services`): specs that need Postgres, Redis, a browser or many
 * processes.
 */
export const SERVICES_DIR = 'test/services';

/**
 * What both tiers share: the package names resolved to the sources, forks with `--expose-gc` (the leak specs),
 * and the JSON report CI asks for through `VITEST_JSON_REPORT` (to print its one-line "N passed, N failed").
 */
export function tierConfig(test: { include: string[]; exclude?: string[]; typecheck?: boolean }): ViteUserConfig {
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
      include: test.include,
      exclude: ['**/node_modules/**', ...(test.exclude ?? [])],
      typecheck: test.typecheck
        ? { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' }
        : { enabled: false },
      // loopctl/testing's matchers (toMatchLoopctlError), registered with expect.extend.
      setupFiles: ['./test/support/matchers-setup.ts'],
      pool: 'forks',
      testTimeout: 20_000,
      hookTimeout: 20_000,
      execArgv: ['--expose-gc'],
      reporters: report ? ['default', 'json'] : ['default'],
      outputFile: report ? { json: report } : undefined,
    },
  });
}

/**
 * `npm test`: every hermetic spec (no network beyond 127.0.0.1 servers a spec starts, no services) and the type
 * tests.
 */
export default tierConfig({
  include: ['test/**/*.test.ts', 'marbles/**/*.test.ts'],
  exclude: [`${SERVICES_DIR}/**`],
  typecheck: true,
});
