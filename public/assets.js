// Every file of public/ and the URL it is served at. Imported `with { type: 'file' }`,
// so `bun build --compile` embeds each file in the binary (the value is then a
// path inside the binary) while `bun app.ts` reads them from public/ directly.
// A file added to public/ must be listed here (test/dashboard.test.ts checks it).
import index from './index.html' with { type: 'file' }
import rules from './rules.html' with { type: 'file' }
import admin from './admin.html' with { type: 'file' }
import coordination from './coordination.html' with { type: 'file' }
import favicon from './favicon.svg' with { type: 'file' }
import css from './css/muster.css' with { type: 'file' }
import apiJs from './js/api.js' with { type: 'file' }
import uiJs from './js/ui.js' with { type: 'file' }
import shellJs from './js/shell.js' with { type: 'file' }
import chartJs from './js/chart.js' with { type: 'file' }
import overviewJs from './js/overview.js' with { type: 'file' }
import rulesJs from './js/rules.js' with { type: 'file' }
import metricsJs from './js/panels/metrics.js' with { type: 'file' }
import instancesJs from './js/panels/instances.js' with { type: 'file' }
import stateJs from './js/panels/state.js' with { type: 'file' }
import eventsJs from './js/panels/events.js' with { type: 'file' }
import llmJs from './js/panels/llm.js' with { type: 'file' }
import budgetsJs from './js/panels/budgets.js' with { type: 'file' }
import auditJs from './js/panels/audit.js' with { type: 'file' }
import namesJs from './js/names.js' with { type: 'file' }
import paletteJs from './js/palette.js' with { type: 'file' }
import adminJs from './js/admin.js' with { type: 'file' }
import adminInstancesJs from './js/admin/instances.js' with { type: 'file' }
import adminWebhooksJs from './js/admin/webhooks.js' with { type: 'file' }
import adminTemplatesJs from './js/admin/templates.js' with { type: 'file' }
import adminContractsJs from './js/admin/contracts.js' with { type: 'file' }
import adminComplianceJs from './js/admin/compliance.js' with { type: 'file' }
import adminBackupJs from './js/admin/backup.js' with { type: 'file' }
import adminTokensJs from './js/admin/tokens.js' with { type: 'file' }
import roleJs from './js/role.js' with { type: 'file' }
import taskStatusJs from './js/task-status.js' with { type: 'file' }
import overdueJs from './js/overdue.js' with { type: 'file' }
import eventSummaryJs from './js/event-summary.js' with { type: 'file' }
import tasksHtml from './tasks.html' with { type: 'file' }
import tasksCss from './css/tasks.css' with { type: 'file' }
import tasksJs from './js/tasks.js' with { type: 'file' }
import coordinationJs from './js/coordination.js' with { type: 'file' }
import coordinationCss from './css/coordination.css' with { type: 'file' }
import messagesHtml from './messages.html' with { type: 'file' }
import messagesCss from './css/messages.css' with { type: 'file' }
import messagesJs from './js/messages.js' with { type: 'file' }
import streamJs from './js/stream.js' with { type: 'file' }
import taskDetailJs from './js/task-detail.js' with { type: 'file' }
import hookPanelsJs from './js/hook-panels.js' with { type: 'file' }
import approvalsHtml from './approvals.html' with { type: 'file' }
import approvalsCss from './css/approvals.css' with { type: 'file' }
import approvalsJs from './js/approvals.js' with { type: 'file' }

export const assets = {
  '/': index,
  '/rules': rules,
  '/admin': admin,
  '/coordination': coordination,
  '/favicon.svg': favicon,
  '/css/muster.css': css,
  '/js/api.js': apiJs,
  '/js/ui.js': uiJs,
  '/js/shell.js': shellJs,
  '/js/chart.js': chartJs,
  '/js/overview.js': overviewJs,
  '/js/rules.js': rulesJs,
  '/js/panels/metrics.js': metricsJs,
  '/js/panels/instances.js': instancesJs,
  '/js/panels/state.js': stateJs,
  '/js/panels/events.js': eventsJs,
  '/js/panels/llm.js': llmJs,
  '/js/panels/budgets.js': budgetsJs,
  '/js/panels/audit.js': auditJs,
  '/js/names.js': namesJs,
  '/js/palette.js': paletteJs,
  '/js/admin.js': adminJs,
  '/js/admin/instances.js': adminInstancesJs,
  '/js/admin/webhooks.js': adminWebhooksJs,
  '/js/admin/templates.js': adminTemplatesJs,
  '/js/admin/contracts.js': adminContractsJs,
  '/js/admin/compliance.js': adminComplianceJs,
  '/js/admin/backup.js': adminBackupJs,
  '/js/admin/tokens.js': adminTokensJs,
  '/js/role.js': roleJs,
  '/js/task-status.js': taskStatusJs,
  '/js/overdue.js': overdueJs,
  '/js/event-summary.js': eventSummaryJs,
  '/tasks': tasksHtml,
  '/css/tasks.css': tasksCss,
  '/js/tasks.js': tasksJs,
  '/js/coordination.js': coordinationJs,
  '/css/coordination.css': coordinationCss,
  '/messages': messagesHtml,
  '/css/messages.css': messagesCss,
  '/js/messages.js': messagesJs,
  '/js/stream.js': streamJs,
  '/js/task-detail.js': taskDetailJs,
  '/js/hook-panels.js': hookPanelsJs,
  '/approvals': approvalsHtml,
  '/css/approvals.css': approvalsCss,
  '/js/approvals.js': approvalsJs,
}
