import { catchError, throwError } from 'rxjs';
import { describeValue, isInstance } from '../../describe.js';
import { CircuitOpen } from './stream-gate.js';
import { isModelFailure, type Attempts, type ModelCall, type RecoveryOperator } from './types.js';

/**
 * "Fallback behind a breaker": the model call goes to the fallback when the primary's attempts
 * failed with a model failure (after their retries; at once for one that is not retried), or when
 * the primary's breaker refused an attempt ({@link CircuitOpen}: reason `circuit_open`). The
 * fallback's first attempt emits `fallback_activated` at its stage start (a cancel tied with the
 * failure wins: no event, no request) and carries `cause: 'fallback'` and the error; the fallback
 * has its own retries and its own rescue. A cancel never reaches here (guarantee 4: cancelled is
 * not failed), nor does any other error: it passes on.
 */
export function fallbackWithBreaker<M extends ModelCall>(
  from: string,
  to: string,
  fallback: Attempts<M>,
): RecoveryOperator<M> {
  return (primary) => (call, why) =>
    primary(call, why).pipe(
      catchError((err: unknown) => {
        const open = isInstance(err, CircuitOpen); // a foreign value: checked totally
        if (!open && !isModelFailure(err)) return throwError(() => err);
        const reason = open ? 'circuit_open' : describeValue(err);
        call.rescued = false; // the fallback's stream may be rescued once too
        const announce = { type: 'fallback_activated', from, to, reason } as const;
        return fallback(call, open ? { cause: 'fallback', announce } : { cause: 'fallback', error: err, announce });
      }),
    );
}
