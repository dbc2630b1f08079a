import { throwError, type Observable } from 'rxjs';
import { isInstance } from '../../describe.js';
import type { ModelResponse } from '../../model/types.js';
import { catchWith } from '../loop-operators.js';
import { stageAt } from '../waits.js';
import {
  StreamBroke,
  type AttemptCause,
  type Attempts,
  type ModelCall,
  type RecoveryContext,
  type RecoveryOperator,
  type RunModelCall,
} from './types.js';

/**
 * "Rescue once" (checkpoint 5: rescue): a streamed attempt that failed after its first event is
 * sent again without streaming, once per provider in a model call. The rescue is a stage at
 * `rescue` (one hop, then a poll: a cancel in the same tick as the failure means it is never
 * sent); its model_request_started carries `cause: 'rescue'` and the stream's error. Whatever else
 * fails, or a second broken stream, passes on as the plain error, for the retry rules.
 */
export function rescueOnce(ctx: RecoveryContext): RecoveryOperator {
  return (attempts) => (call, why) => rescued$(ctx, attempts, call, why);
}

/** {@link rescueOnce} in the chain an agent shares between its runs (model-call.ts): the run is the call's. */
export const rescueOnceInRun: RecoveryOperator<RunModelCall> = (attempts) => (call, why) =>
  rescued$(call.ctx, attempts, call, why);

function rescued$<M extends ModelCall>(
  ctx: RecoveryContext,
  attempts: Attempts<M>,
  call: M,
  why: AttemptCause,
): Observable<ModelResponse> {
  return catchWith(attempts(call, why), (err: unknown) => {
    if (!isInstance(err, StreamBroke)) return throwError(() => err); // a foreign value: checked totally
    const broke = err as StreamBroke;
    if (call.rescued) return throwError(() => broke.error);
    call.rescued = true;
    return stageAt(ctx, 'rescue', () => attempts(call, { cause: 'rescue', error: broke.error }));
  });
}
