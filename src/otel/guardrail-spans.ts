import { SpanKind, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { GuardrailPassed, GuardrailStarted, GuardrailTripped } from '../events.js';
import { endSpan, errorEnd } from './spans.js';

/** The span attribute naming a guardrail (docs/telemetry.md, "Guardrails"). */
export const ATTR_LOOPCTL_GUARDRAIL_NAME = 'loopctl.guardrail.name' as const;
/** What the guardrail checked: `input`, `output`, `tool_before`, `tool_after`. */
export const ATTR_LOOPCTL_GUARDRAIL_KIND = 'loopctl.guardrail.kind' as const;
/** How it ran beside the model: `before`, `parallel`, `after`, `hold`. */
export const ATTR_LOOPCTL_GUARDRAIL_MODE = 'loopctl.guardrail.mode' as const;
/** True when its tripwire fired. */
export const ATTR_LOOPCTL_GUARDRAIL_TRIPPED = 'loopctl.guardrail.tripped' as const;

type Guard = GuardrailStarted | GuardrailPassed | GuardrailTripped;
const keyOf = (e: Guard): string => `${e.kind}\u0000${e.name}\u0000${e.callId ?? ''}`;

/**
 * One run's guardrail spans (docs/telemetry.md, "Guardrails"): `guardrail {name}`, a child of the run's span, from
 * `guardrail_started` to `guardrail_passed` (ok) or `guardrail_tripped` (an ERROR status: the run or the call was
 * refused; `error.type` `GuardrailTrippedError`). One still open at the run's end is interrupted.
 */
export class GuardrailSpans {
  readonly #open = new Map<string, Span>();

  constructor(
    private readonly tracer: Tracer,
    private readonly parent: Context,
  ) {}

  started(event: GuardrailStarted): void {
    const attributes = {
      [ATTR_LOOPCTL_GUARDRAIL_NAME]: event.name,
      [ATTR_LOOPCTL_GUARDRAIL_KIND]: event.kind,
      [ATTR_LOOPCTL_GUARDRAIL_MODE]: event.mode,
    };
    const span = this.tracer.startSpan(`guardrail ${event.name}`, { kind: SpanKind.INTERNAL, attributes }, this.parent);
    // A check of the same guardrail still open was abandoned for this one (a chunk check, then the whole answer).
    const abandoned = this.#open.get(keyOf(event));
    if (abandoned !== undefined) endSpan(abandoned, { kind: 'interrupted' });
    this.#open.set(keyOf(event), span);
  }

  ended(event: GuardrailPassed | GuardrailTripped): void {
    const span = this.#open.get(keyOf(event));
    if (span === undefined) return;
    this.#open.delete(keyOf(event));
    const tripped = event.type === 'guardrail_tripped';
    const attributes = { [ATTR_LOOPCTL_GUARDRAIL_TRIPPED]: tripped };
    if (!tripped) return endSpan(span, { kind: 'ok', attributes });
    const message = event.error?.message ?? `guardrail ${event.name} tripped`;
    endSpan(span, errorEnd({ name: 'GuardrailTrippedError', message }, attributes));
  }

  /** The run ended: every span still open ends interrupted. */
  close(): void {
    for (const span of this.#open.values()) endSpan(span, { kind: 'interrupted' });
    this.#open.clear();
  }
}
