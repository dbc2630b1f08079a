import { expect } from 'vitest';
import { loopctlMatchers, type LoopctlMatchers } from 'loopctl/testing';

// Registered for every spec (vitest setupFiles), as a user of loopctl/testing would.
expect.extend(loopctlMatchers);

declare module 'vitest' {
  // `T = any`: every declaration of Matchers must have the same type parameters as vitest's own.
  interface Matchers<T = any> extends LoopctlMatchers<T> {}
}
