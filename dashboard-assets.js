// Every file of public/ and the URL it is served at. Imported `with { type: 'file' }`,
// so `bun build --compile` embeds each file in the binary (the value is then a
// path inside the binary) while `bun app.ts` reads them from public/ directly.
// A file added to public/ must be listed here (test/dashboard.test.ts checks it).
import index from './public/index.html' with { type: 'file' }
import rules from './public/rules.html' with { type: 'file' }
import admin from './public/admin.html' with { type: 'file' }
import favicon from './public/favicon.svg' with { type: 'file' }
import css from './public/css/muster.css' with { type: 'file' }
import apiJs from './public/js/api.js' with { type: 'file' }
import uiJs from './public/js/ui.js' with { type: 'file' }
import shellJs from './public/js/shell.js' with { type: 'file' }
import chartJs from './public/js/chart.js' with { type: 'file' }
import overviewJs from './public/js/overview.js' with { type: 'file' }
import rulesJs from './public/js/rules.js' with { type: 'file' }
import metricsJs from './public/js/panels/metrics.js' with { type: 'file' }
import instancesJs from './public/js/panels/instances.js' with { type: 'file' }
import stateJs from './public/js/panels/state.js' with { type: 'file' }
import eventsJs from './public/js/panels/events.js' with { type: 'file' }
import llmJs from './public/js/panels/llm.js' with { type: 'file' }
import auditJs from './public/js/panels/audit.js' with { type: 'file' }
import namesJs from './public/js/names.js' with { type: 'file' }
import paletteJs from './public/js/palette.js' with { type: 'file' }
import adminJs from './public/js/admin.js' with { type: 'file' }
import adminInstancesJs from './public/js/admin/instances.js' with { type: 'file' }
import adminWebhooksJs from './public/js/admin/webhooks.js' with { type: 'file' }
import adminTemplatesJs from './public/js/admin/templates.js' with { type: 'file' }
import adminContractsJs from './public/js/admin/contracts.js' with { type: 'file' }
import adminComplianceJs from './public/js/admin/compliance.js' with { type: 'file' }
import adminBackupJs from './public/js/admin/backup.js' with { type: 'file' }

export const assets = {
  '/': index,
  '/rules': rules,
  '/admin': admin,
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
}
