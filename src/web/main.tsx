import { createRoot } from 'react-dom/client';
import { api } from './api.js';
import { App } from './app.js';
import { ChatStore } from './store.js';

/** The agent `loopctl serve` runs, as it names it (`GET /api/info`). */
const info = await api.info().catch(() => undefined);
const store = new ChatStore(info?.agent ?? 'loopctl');
createRoot(document.getElementById('root')!).render(<App store={store} info={info} />);
