/** loopctl/testing: deterministic models and helpers for tests (DESIGN.md §7). */
export { scriptedModel, type ScriptedModel, type ScriptedStep, type ScriptedToolCall, type ScriptedCall, type ScriptedModelOptions } from './scripted-model.js';
