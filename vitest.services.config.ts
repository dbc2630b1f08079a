import { SERVICES_DIR, tierConfig } from './vitest.config.js';

/**
 * `npm run test:services`: the specs that need local services (Postgres on 127.0.0.1:5432, Redis on
 * 127.0.0.1:6379), a browser or many processes. A missing service fails its spec with a one-line cause; nothing
 * here is skipped.
 */
export default tierConfig({ include: [`${SERVICES_DIR}/**/*.test.ts`] });
