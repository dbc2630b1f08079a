import { afterEach, beforeEach } from 'vitest';

/** Collects the process's unhandled rejections during each test of the calling file (cleared before each). */
export function trackUnhandledRejections(): unknown[] {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => void process.off('unhandledRejection', onUnhandled));
  return unhandled;
}
