import { createRoot } from 'react-dom/client';
import { api } from './api.js';
import { App } from './app.js';
import { AskSetting } from './ask-setting.js';
import { ChatStore } from './store.js';

/** The agents `loopctl serve` runs, as it names them (`GET /api/info`). */
const info = await api.info().catch(() => undefined);
const ask = new AskSetting(info);
const store = new ChatStore(() => ask.agent());
if (info?.queue !== undefined) store.watchQueue();
createRoot(document.getElementById('root')!).render(<App store={store} info={info} ask={ask} />);
