import type { Steer } from './state.js';
import type { ChatStore } from './store.js';

/**
 * The steering messages: queued (with Withdraw), injected into a turn, or withdrawn. With no run working, what
 * is still queued waits in the thread's mailbox for the next run (a cancelled run gives its steering back).
 */
export function SteeringList({
  steering,
  store,
  live,
}: {
  steering: readonly Steer[];
  store: ChatStore;
  live: boolean;
}) {
  return (
    <section className="steering" aria-label="Steering">
      <h2>{live ? 'Steering' : 'Steering, queued for the next run'}</h2>
      <ul>
        {steering.map((s) => (
          <li key={s.id} data-status={s.status}>
            <span className="steer-text">{s.text}</span> <span className="badge">{s.status}</span>
            {s.status === 'queued' && (
              <button type="button" onClick={() => void store.withdraw(s.id)} aria-label={`Withdraw "${s.text}"`}>
                Withdraw
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
