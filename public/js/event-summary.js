// One line a person reads for an event, instead of its JSON: who (instance names, not
// ids) did what to which thing. Topics without a sentence of their own get their main
// fields as "field value" pairs, ids named likewise. The raw JSON stays one click away.

import { nameOf } from './names.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const REASONS = {
  released: 'released',
  expired: 'expired',
  holder_stale: 'holder went stale',
  holder_deregistered: 'holder deregistered',
  forced: 'force-released',
  nack: 'nacked',
  timeout: 'not acked in time',
  dependency: 'a dependency failed',
  failures: 'too many failed deliveries',
}

const list = (xs, n = 3) => (Array.isArray(xs) ? `${xs.slice(0, n).join(', ')}${xs.length > n ? ` +${xs.length - n}` : ''}` : String(xs ?? ''))
const reason = (r) => (r ? ` (${REASONS[r] ?? r})` : '')

/** topic → (data, name) → text */
const SENTENCES = {
  'state.changed': (d) => (d.operation === 'delete' ? `${d.key} deleted` : `${d.key} → v${d.version}${d.operation === 'rollback' ? ' (rollback)' : ''}`),
  'spec.changed': (d) => (d.operation === 'delete' ? `spec ${d.project}/${d.name} deleted` : `spec ${d.project}/${d.name} → v${d.version}`),
  'instance.registered': (d) => `${d.name} registered${d.workspace ? ` in ${d.workspace}` : ''}`,
  'instance.resumed': (d) => `${d.name} resumed`,
  'instance.deregistered': (d) => `${d.name} deregistered`,
  'instance.stale': (d) => `${d.name} went stale`,
  'lock.acquired': (d, n) => `${n(d.instance_id)} took lock ${d.name}`,
  'lock.released': (d, n) => `${n(d.instance_id)} let go of lock ${d.name}${reason(d.reason)}`,
  'reservation.granted': (d, n) => `${n(d.instance_id)} reserved ${list(d.paths)} in ${d.project}${d.exclusive === false ? ' (shared)' : ''}`,
  'reservation.released': (d, n) => `${n(d.instance_id)} released ${list(d.paths)} in ${d.project}${reason(d.reason)}`,
  'edit.blocked': (d, n) => `${n(d.instance_id)} was stopped editing ${list(d.paths)}`,
  'message.sent': (d) => `${d.from} → ${list(d.to)}: “${d.subject}”`,
  'message.acked': (d) => `${d.by} acked message #${d.id}`,
  'message.overdue': (d) => `${d.to} has not acked #${d.id} from ${d.from} in time`,
  'task.created': (d) => `task #${d.id} added to ${d.queue}`,
  'task.claimed': (d, n) => `${n(d.instance_id)} claimed task #${d.id} in ${d.queue}`,
  'task.done': (d, n) => `${d.instance_id ? n(d.instance_id) : 'someone'} finished task #${d.id} in ${d.queue}`,
  'task.failed': (d, n) => `task #${d.id} in ${d.queue} failed${reason(d.reason)}${d.instance_id ? `, claimed by ${n(d.instance_id)}` : ''}`,
  'task.requeued': (d, n) => `task #${d.id} back to ready${reason(d.reason)}${d.instance_id ? `, was ${n(d.instance_id)}'s` : ''}`,
  'task.cancelled': (d) => `task #${d.id} in ${d.queue} cancelled`,
  'task.retried': (d) => `task #${d.id} in ${d.queue} retried${d.previous_status ? ` (was ${d.previous_status})` : ''}`,
  'task.unblocked': (d) => `task #${d.id} in ${d.queue} unblocked`,
  'task.noted': (d) => `note on task #${d.id}`,
  'rule.proposed': (d, n) => `rule ${d.rule_id} proposed for ${d.project}${d.proposed_by ? ` by ${n(d.proposed_by)}` : ''}`,
  'token.created': (d) => `${d.role} token “${d.name}” created`,
  'token.revoked': (d) => `${d.role} token “${d.name}” revoked`,
  'webhook.created': (d) => `webhook ${d.id} → ${d.url}`,
  'webhook.deleted': (d) => `webhook ${d.id} deleted`,
  'template.created': (d) => `template ${d.id} created`,
  'template.updated': (d) => `template ${d.id} → v${d.version}`,
  'template.deleted': (d) => `template ${d.id} deleted`,
  'template.applied': (d) => `template ${d.id} applied to ${d.project}`,
  'rule.deleted': (d) => `rule ${d.rule_id} of ${d.project} deleted`,
  'rules.imported': (d) => `${d.count} rules imported`,
  'rules.replaced': (d) => `${d.project}'s rules replaced (${d.count})`,
  'webhook.disabled': (d) => `webhook ${d.id} disabled${reason(d.reason)}`,
  'compliance.violation': (d, n) => `${n(d.instance_id)} breaks contract ${d.contract} of ${d.project}`,
  'backup.restored': () => 'a backup was restored',
}

/** A field's value as text: ids as instance names, short lists joined, objects left out. */
function plain(key, value, n) {
  if (value === null || value === undefined || value === '') return null
  if (typeof value === 'string') return UUID.test(value) || /instance_id$/.test(key) ? n(value) : value.length > 60 ? `${value.slice(0, 57)}…` : value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value) && value.every((v) => typeof v !== 'object')) return list(value)
  return null
}

/** The event's line: "ada took lock deploy". `names` maps instance ids to instances (names.js). */
export function summarize(event, names) {
  const n = (id) => nameOf(names, id)
  const d = event.data
  const sentence = SENTENCES[event.topic]
  if (sentence && d && typeof d === 'object') {
    try {
      return sentence(d, n)
    } catch {}
  }
  if (d === null || d === undefined) return ''
  const own = plain('', d, n)
  if (own !== null || typeof d !== 'object') return own ?? ''
  return Object.entries(d)
    .map(([k, v]) => [k.replace(/_id$/, '').replace(/_/g, ' '), plain(k, v, n)])
    .filter(([, v]) => v !== null)
    .slice(0, 5)
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ')
}
