// Instances: every registered agent with status, intent and last heartbeat.
// Stale ones sort first and are tinted so they stand out.

import { api } from '../api.js'
import { cell, changed, every, failure, fill, h, loading, stateBox, timeAgo } from '../ui.js'

const bySeverity = (a, b) =>
  (a.status === 'stale' ? 0 : 1) - (b.status === 'stale' ? 0 : 1) || String(b.last_seen).localeCompare(String(a.last_seen))

function row(inst) {
  const stale = inst.status === 'stale'
  return h('tr', { class: stale ? 'stale' : null, dataset: { id: inst.id } },
    cell('Name', { class: 'name-cell' },
      h('a', { class: 'wrap-any', href: `/admin#instances/${encodeURIComponent(inst.id)}`, title: 'Metrics and actions on the admin page', text: inst.name }),
      h('div', { class: 'sub mono', title: inst.id, text: String(inst.id).slice(0, 8) })),
    cell('Status', {}, h('span', { class: `badge ${stale ? 'warn' : inst.status === 'active' ? 'ok' : ''}`, text: inst.status || 'unknown' })),
    cell('Intent', { class: 'wrap-any' },
      inst.intent ? h('div', { text: inst.intent }) : h('span', { class: 'sub', text: 'no intent set' }),
      (inst.capabilities ?? []).map((c) => h('span', { class: 'chip', text: c }))),
    cell('Workspace', { class: 'wrap-any' },
      h('div', { text: inst.workspace || '—' }),
      inst.stack ? h('div', { class: 'sub', text: inst.stack }) : null),
    cell('Last seen', { class: 'nowrap' }, inst.last_seen ? timeAgo(inst.last_seen) : '—'),
  )
}

export function instancesPanel() {
  const section = document.getElementById('instances')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const drawn = {}
  loading(body)
  const poll = every(5000, async () => {
    let list
    try {
      list = await api('/api/instances')
    } catch (err) {
      drawn.last = null
      meta.textContent = ''
      return failure(body, err, 'GET /api/instances', () => poll.now())
    }
    if (!changed(drawn, list)) return
    const stale = list.filter((i) => i.status === 'stale').length
    fill(meta, `${list.length - stale} active`, stale ? [' · ', h('b', { class: 'badge warn', text: `${stale} stale` })] : null)
    if (list.length === 0)
      return stateBox(body, 'empty', 'No agents registered yet',
        ['Agents appear here once they call ', h('code', { text: 'POST /api/instances/register' }), ' or the MCP tool ', h('code', { text: 'register_instance' }), '.'])
    fill(body, h('table', { class: 'data cards' },
      h('thead', {}, h('tr', {}, ['Name', 'Status', 'Intent', 'Workspace · stack', 'Last seen'].map((t) => h('th', { text: t })))),
      h('tbody', {}, list.sort(bySeverity).map(row))))
  })
  return poll
}
