// The store: every table group behind one object of Promise-returning methods,
// so routes never see SQL and another backend can replace SQLite later.
// Routes must reach sub-stores through the Store object on every call (never keep
// a sub-store in a variable): restore swaps the database and rebuilds them in place.
import type { Database } from 'bun:sqlite'
import { openDatabase } from './db'
import { auditStore, type AuditStore } from './audit'
import { eventsStore, type EventsStore } from './events'
import { instancesStore, type InstancesStore } from './instances'
import { specsStore, type SpecsStore } from './specs'
export type { Event } from './events'
import { stateStore, type StateStore } from './state'
import { webhooksStore, type WebhooksStore } from './webhooks'

export interface Store {
  state: StateStore
  specs: SpecsStore
  audit: AuditStore
  events: EventsStore
  instances: InstancesStore
  webhooks: WebhooksStore
  close(): void
}

function build(db: Database) {
  return {
    state: stateStore(db),
    specs: specsStore(db),
    audit: auditStore(db),
    events: eventsStore(db),
    instances: instancesStore(db),
    webhooks: webhooksStore(db),
  }
}

export function openStore(dataDir: string): Store {
  const db = openDatabase(dataDir)
  return {
    ...build(db),
    close: () => db.close(),
  }
}
