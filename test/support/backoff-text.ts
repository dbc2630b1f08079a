/**
 * A retry's backoff as the CLI shows it ("retrying in 1.5 s", durationText of src/cli/describe-error.ts), for specs
 * that read a jittered backoff they cannot choose: full jitter draws anything from 0 up to the cap, so every form
 * durationText gives can turn up (tenths of a second, whole ms, "under 1 ms" for a draw under half a millisecond).
 */
export const BACKOFF_TEXT = String.raw`(?:[\d.]+ s|\d+ ms|under 1 ms)`;
