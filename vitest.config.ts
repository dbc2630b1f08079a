import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'marbles/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
    execArgv: ['--expose-gc'],
  },
});
