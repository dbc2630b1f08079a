/**
 * The second process of the thinking round-trip spec: `node --import tsx anthropic-continue.ts BASE_URL FILE TEXT`
 * opens the SQLite session store at FILE, continues the session `chat` with TEXT (what `loopctl --continue` does)
 * on an Anthropic agent with extended thinking against BASE_URL, and prints the terminal event as one JSON line.
 */
import { lastValueFrom } from 'rxjs';
import { run } from '../../src/index.js';
import { SqliteSessionStore } from '../../src/sqlite/index.js';
import { thinkingWeatherAgent } from './anthropic-thinking-agent.js';

const [baseURL, file, text] = process.argv.slice(2) as [string, string, string];
const store = new SqliteSessionStore(file);
const terminal = await lastValueFrom(run(thinkingWeatherAgent(baseURL), text, { session: store.session('chat') }));
await store.close();
process.stdout.write(`${JSON.stringify(terminal)}\n`);
