import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The web app of `loopctl serve` (src/web/), built into dist/web/ and shipped in the package, so the command
 * needs no build step. JSX is compiled by Vite's own transform (React's automatic runtime): no plugin.
 * `npm run build` runs it after tsc; the test helpers run it when src/web changed.
 */
export default defineConfig({
  root: fileURLToPath(new URL('./src/web', import.meta.url)),
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: fileURLToPath(new URL('./dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});
