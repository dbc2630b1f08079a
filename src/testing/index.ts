/** loopctl/testing: deterministic models and helpers for tests (docs/testing.md), as rxjs/testing is for RxJS. */
export {
  scriptedModel,
  type ScriptedModel,
  type ScriptedStep,
  type ScriptedToolCall,
  type ScriptedCall,
  type ScriptedModelOptions,
} from './scripted-model.js';
export {
  eventLabel,
  eventLabels,
  sequentialIds,
  gate,
  normalizeError,
  collectEvents,
  recordTimeline,
  type Gate,
} from './helpers.js';
export {
  loopctlMatchers,
  type LoopctlMatchers,
  type LoopctlMatcherContext,
  type LoopctlMatcherResult,
  type ExpectedLoopctlError,
} from './matchers.js';
