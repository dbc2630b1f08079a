/**
 * The pattern the services specs read a jittered backoff with (test/support/backoff-text.ts) takes every form the
 * CLI shows one in: full jitter draws from 0 up to the cap (8 s by default), so a draw under 0.5 ms ("under 1 ms"),
 * in whole ms or in tenths of a second all turn up now and then.
 */
import { describe, expect, it } from 'vitest';
import { durationText } from '../src/cli/describe-error.js';
import { DEFAULTS } from '../src/defaults.js';
import { BACKOFF_TEXT } from './support/backoff-text.js';

describe('the backoff pattern of the services specs', () => {
  it('matches what durationText shows for any jittered backoff from 0 to the cap', () => {
    const pattern = new RegExp(`^${BACKOFF_TEXT}$`);
    const draws = [0, 1e-6, 0.3, 0.49, 0.5, 1, 49.4, 99.4, 99.5, 100, 949, 1234.5, 9_999, DEFAULTS.retry.maxDelayMs];
    const shown = draws.map((ms) => durationText(ms));
    expect(shown.filter((text) => !pattern.test(text))).toEqual([]);
    expect(new Set(shown)).toContain('under 1 ms');
  });
});
