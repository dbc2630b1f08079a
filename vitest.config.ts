import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url));

export default defineConfig({
  // Specs and examples import the package by name; resolve it to the sources.
  resolve: {
    alias: [
      { find: /^loopctl\/testing$/, replacement: src('testing/index.ts') },
      { find: /^loopctl\/node$/, replacement: src('node/index.ts') },
      { find: /^loopctl$/, replacement: src('index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts', 'marbles/**/*.test.ts'],
    // loopctl/testing's matchers (toMatchLoopctlError), registered with expect.extend.
    setupFiles: ['./test/support/matchers-setup.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
    execArgv: ['--expose-gc'],
    // CI asks for a JSON report as well, to print its one-line "N passed, N failed".
    reporters: process.env.VITEST_JSON_REPORT ? ['default', 'json'] : ['default'],
    outputFile: process.env.VITEST_JSON_REPORT ? { json: process.env.VITEST_JSON_REPORT } : undefined,
  },
});
