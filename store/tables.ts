// Every table group of the store, built once for both backends over a reads runner
// and a writes runner; what differs per backend (versioned documents, events) comes in.
import type { Dialect, Runner, UnitHooks } from './runner'
import type { Docs } from './versioned'
import type { Event, EventsStore, EventsWrites } from './events'
import { auditStore, auditWrites } from './audit'
import { complianceStore, complianceWrites } from './compliance'
import { holdersStore, holdersWrites } from './holders'
import { instancesStore, instancesWrites } from './instances'
import { llmStore, llmWrites } from './llm'
import { budgetsStore, budgetsWrites } from './budgets'
import { locksStore, locksWrites } from './locks'
import { metricsStore, metricsWrites } from './metrics'
import { queueStore, queueWrites } from './queue'
import { reservationsStore, reservationsWrites } from './reservations'
import { rulesStore, rulesWrites } from './rules'
import { sessionsStore, sessionsWrites } from './sessions'
import { specsStore, specsWrites } from './specs'
import { stateStore, stateWrites } from './state'
import { templatesStore, templatesWrites } from './templates'
import { webhooksStore, webhooksWrites } from './webhooks'
import { messagesStore, messagesWrites } from './messages'
import { ShownThrough } from './shown-through'
import { tokensStore, tokensWrites } from './tokens'
import { projectsStore, projectsWrites } from './projects'
import { approvalsStore, approvalsWrites } from './approvals'

export interface Backend {
  /** Reads: committed data only. */
  reads: Runner
  /** Writes: inside the running unit of work. */
  writes: Runner
  dialect: Dialect
  docs: Docs
  events: { reads: EventsStore; writes: EventsWrites }
  /** The running unit's hooks. */
  unit: UnitHooks
  /** This process is the database's only writer, so reads may be cached between writes. */
  soleWriter: boolean
  /** Hands an event on to its listeners once the unit that wrote it has committed. */
  deliver(event: Event): void
}

/** Every table group's reads, and the Tx a unit of work writes through (`emit` included). */
export function tables(backend: Backend) {
  const { reads, writes } = groups(backend)
  const { events, unit, deliver } = backend
  const tx = {
    ...writes,
    /** Appends an event to the unit; its listeners get it only after that unit's COMMIT. */
    async emit(topic: string, data: unknown, source: string, echo?: boolean): Promise<Event> {
      const event = await events.writes.append(topic, data, source, echo)
      unit.afterCommit(() => deliver(event))
      return event
    },
  }
  return { reads, tx }
}

function groups({ reads: r, writes: w, dialect: d, docs, events, unit, soleWriter }: Backend) {
  const webhooks = webhooksStore(r, soleWriter)
  const shownThrough = soleWriter ? new ShownThrough() : null
  const messages = messagesStore(r, d, soleWriter, shownThrough)
  const reservations = reservationsStore(r, d, soleWriter)
  const sessions = sessionsStore(r, soleWriter)
  return {
    reads: {
      state: stateStore(docs),
      specs: specsStore(docs),
      audit: auditStore(r, soleWriter),
      events: events.reads,
      instances: instancesStore(r, d),
      tokens: tokensStore(r),
      metrics: metricsStore(r),
      llm: llmStore(r, d),
      budgets: budgetsStore(r),
      rules: rulesStore(r),
      templates: templatesStore(r, d),
      compliance: complianceStore(r),
      webhooks,
      holders: holdersStore(r, d),
      queue: queueStore(r, d),
      locks: locksStore(r),
      reservations,
      messages,
      sessions,
      projects: projectsStore(r),
      approvals: approvalsStore(r),
    },
    writes: {
      state: stateWrites(docs),
      specs: specsWrites(docs),
      audit: auditWrites(w, soleWriter),
      events: events.writes,
      instances: instancesWrites(w, d, unit, (instances) => sessions.changed({ instances })),
      tokens: tokensWrites(w),
      metrics: metricsWrites(w),
      llm: llmWrites(w),
      budgets: budgetsWrites(w, d),
      rules: rulesWrites(w),
      templates: templatesWrites(w),
      compliance: complianceWrites(w),
      webhooks: webhooksWrites(w, unit, webhooks.changed),
      holders: holdersWrites(w),
      queue: queueWrites(w, d),
      locks: locksWrites(w),
      reservations: reservationsWrites(w, d, unit, reservations.changed),
      messages: messagesWrites(w, d, unit, messages, shownThrough),
      sessions: sessionsWrites(w, unit, sessions.changed),
      projects: projectsWrites(w, unit, reservations.changed),
      approvals: approvalsWrites(w),
    },
  }
}

/** Every table group's reads. */
export type Reads = ReturnType<typeof groups>['reads']
/** Every table group's writes, for one unit of work. */
export type Writes = ReturnType<typeof groups>['writes']
