// The event bus: publishing stores the event, then hands it to every listener
// (WebSocket subscribers, the webhook dispatcher). Listeners must not block.
import type { Event, Store } from './store'
import { track } from './lib/background'

export type Listener = (event: Event) => void

export class Bus {
  private listeners = new Set<Listener>()

  constructor(private store: Store) {}

  async publish(topic: string, data: unknown, source = ''): Promise<Event> {
    const event = await this.store.events.append(topic, data, source)
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch (err) {
        console.error('event listener failed:', err)
      }
    }
    return event
  }

  /**
   * Publishes a change event without holding up the caller's response: the event
   * joins the next group commit instead of costing the write a second one.
   */
  notify(topic: string, data: unknown, source: string): void {
    track(this.publish(topic, data, source).catch((err) => console.error(`publishing ${topic} failed:`, err)))
  }

  /** Returns the function that removes the listener. */
  listen(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
