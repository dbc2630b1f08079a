import type { ChatState } from './state.js';

/** The `sessionStorage` key: one conversation per browser tab, kept across reloads. */
export const STORAGE_KEY = 'loopctl.chat';
const VERSION = 1;

/**
 * The saved state, or undefined (nothing saved, another version, or not readable). The state and the id of
 * the last frame applied to it are saved together, so the page resumes exactly after that frame.
 */
export function loadState(storage: Storage | undefined): ChatState | undefined {
  try {
    const saved = JSON.parse(storage?.getItem(STORAGE_KEY) ?? 'null') as { version?: number; state?: ChatState };
    const state = saved?.state;
    if (saved?.version !== VERSION || typeof state?.threadId !== 'string') return undefined;
    if (!Array.isArray(state.entries) || !Array.isArray(state.steering)) return undefined;
    return state;
  } catch {
    return undefined;
  }
}

/** Saves `state`; a full or unavailable storage only costs the resume after a reload. */
export function saveState(storage: Storage | undefined, state: ChatState): void {
  try {
    storage?.setItem(STORAGE_KEY, JSON.stringify({ version: VERSION, state }));
  } catch {
    /* quota exceeded or storage disabled */
  }
}
