// Entry point of the overview page (GET /): starts every panel. Panels poll on
// their own; change events from the live stream make the matching ones refresh
// at once.

import { onTokenChange } from './api.js'
import { refreshApprovalCount, startShell } from './shell.js'
import { metricsPanel } from './panels/metrics.js'
import { instancesPanel } from './panels/instances.js'
import { statePanel } from './panels/state.js'
import { eventsPanel } from './panels/events.js'
import { llmPanel } from './panels/llm.js'
import { auditPanel } from './panels/audit.js'
import { budgetsPanel } from './panels/budgets.js'

startShell()
const panels = {
  metrics: metricsPanel(),
  instances: instancesPanel(),
  state: statePanel(),
  llm: llmPanel(),
  audit: auditPanel(),
  budgets: budgetsPanel(),
}
/** The cards read several endpoints: a burst of events refreshes them once a second at most. */
let cardsSoon = null
eventsPanel({
  onEvent(event) {
    const area = event.topic.split('.')[0]
    if (area === 'state') panels.state.now()
    if (area === 'instance') panels.instances.now()
    if (area === 'budget') panels.budgets.now()
    if (area === 'approval') refreshApprovalCount()
    cardsSoon ??= setTimeout(() => ((cardsSoon = null), panels.metrics.now()), 1000)
  },
})
onTokenChange(() => {
  for (const p of Object.values(panels)) p.now()
})
