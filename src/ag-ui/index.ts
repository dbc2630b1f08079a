/**
 * loopctl/ag-ui: a run's events in the AG-UI protocol (docs/ui.md). Isomorphic; needs the optional peer
 * dependency `@ag-ui/core`.
 */
export { toAgUi, toAgUiFrames, parseEventId, type AgUiFrame, type EventCursor, type ToAgUiOptions } from './frames.js';
export { AgUiMapper, type RestartCause } from './mapper.js';
export {
  LOOPCTL_EVENTS,
  MINTED_ID_PREFIX,
  assistantMessageId,
  toolResultMessageId,
  isMintedMessageId,
} from './names.js';
