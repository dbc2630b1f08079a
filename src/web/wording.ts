/** The page's wording table lives in src/wording.ts, so the CLI (built without src/web) reads the same words. */
export * from '../wording.js';
