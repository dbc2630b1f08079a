import type { Steer } from './state.js';
import type { ChatStore } from './store.js';

/** The steering messages: queued (with Withdraw), injected into a turn, or withdrawn. */
export function SteeringList({ steering, store }: { steering: readonly Steer[]; store: ChatStore }) {
  return (
    <section className="steering" aria-label="Steering">
      <h2>Steering</h2>
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
