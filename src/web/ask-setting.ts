import { BehaviorSubject } from 'rxjs';
import type { ServerInfo } from './api.js';

/** The `localStorage` key of the page's setting "Ask before writes and shell commands" (kept across tabs). */
export const ASK_KEY = 'loopctl.askFirst';

/**
 * The page's setting "Ask before writes and shell commands": on, the page starts runs of the server's asking
 * agent (`info.askingAgent`), whose write_file and run_shell calls wait for Approve/Reject in the page. The
 * server decides what each agent may do, so the setting can only make runs stricter: under `serve --confirm`
 * it is on and cannot be turned off (`locked`), and without an asking agent (`serve --queue`, or no tool that
 * would ask) it is not offered (`offered` false).
 */
export class AskSetting {
  readonly on$: BehaviorSubject<boolean>;
  /** `serve --confirm`: every run asks; the setting shows on and cannot change. */
  readonly locked: boolean;
  /** Whether the page shows the setting at all. */
  readonly offered: boolean;

  constructor(
    private readonly info: ServerInfo | undefined,
    private readonly storage: Storage | undefined = globalThis.localStorage,
  ) {
    this.locked = info?.confirm === true;
    this.offered = this.locked || info?.askingAgent !== undefined;
    this.on$ = new BehaviorSubject(this.locked || (this.offered && read(storage)));
  }

  /** Turns the setting on or off (kept for the next visit); nothing changes while it is locked. */
  set(on: boolean): void {
    if (this.locked || !this.offered) return;
    try {
      this.storage?.setItem(ASK_KEY, on ? '1' : '0');
    } catch {
      /* storage disabled: the setting holds for this page only */
    }
    this.on$.next(on);
  }

  /** The agent a new run starts: the asking one when the setting is on and the server has one. */
  agent(): string {
    const main = this.info?.agent ?? 'loopctl';
    return this.on$.value && this.info?.askingAgent !== undefined ? this.info.askingAgent : main;
  }
}

function read(storage: Storage | undefined): boolean {
  try {
    return storage?.getItem(ASK_KEY) === '1';
  } catch {
    return false;
  }
}
