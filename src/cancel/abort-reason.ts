/**
 * The reason a cancel carries when an AbortSignal's `reason` cannot be read (its getter
 * throws): "reading a reason never throws". A frozen object, so a handler can tell it apart
 * with `event.reason === UNREADABLE_REASON`.
 */
export const UNREADABLE_REASON: Readonly<{ type: 'unreadable_reason' }> = Object.freeze({
  type: 'unreadable_reason' as const,
});

/**
 * `signal.reason`, or {@link UNREADABLE_REASON} when reading it throws ("reading a reason
 * never throws"). Never throws.
 */
export function readAbortReason(signal: AbortSignal): unknown {
  try {
    return signal.reason;
  } catch {
    return UNREADABLE_REASON;
  }
}

/** `signal.aborted`, or `false` when reading it throws (then its 'abort' event still cancels). Never throws. */
export function readAborted(signal: AbortSignal): boolean {
  try {
    return signal.aborted === true;
  } catch {
    return false;
  }
}
