// Recent audit entries (GET /api/audit, newest first); failed calls are tinted.

import { api } from '../api.js'
import { cell, changed, every, failure, fill, h, loading, stateBox, timeAgo } from '../ui.js'

function row(e) {
  const failed = e.outcome !== 'success'
  return h('tr', { class: failed ? 'failed' : null },
    cell('Action', {},
      h('div', { class: 'mono nowrap', text: e.action }),
      h('div', { class: 'sub mono clip', title: e.resource, text: e.resource })),
    cell('Who · when', { class: 'nowrap' },
      h('div', { class: 'clip', title: e.actor, text: e.actor }),
      h('div', { class: 'sub' }, timeAgo(e.timestamp))),
    cell('Outcome', {},
      h('span', { class: `badge ${failed ? 'bad' : 'ok'}`, text: e.outcome }),
      e.detail ? h('div', { class: 'sub', text: e.detail }) : null),
  )
}

export function auditPanel() {
  const section = document.getElementById('audit')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const errorsOnly = document.getElementById('audit-errors')
  let entries = null

  const render = () => {
    if (!entries) return
    const shown = errorsOnly.checked ? entries.filter((e) => e.outcome !== 'success') : entries
    meta.textContent = `latest ${entries.length}`
    if (entries.length === 0)
      return stateBox(body, 'empty', 'No audit entries yet', 'Every mutating API call is recorded here: who did what, to which resource, and whether it worked.')
    if (shown.length === 0) return stateBox(body, 'empty', 'No failed calls among the latest entries')
    fill(body, h('table', { class: 'data cards' },
      h('thead', {}, h('tr', {}, ['Action · resource', 'Who · when', 'Outcome'].map((t) => h('th', { text: t })))),
      h('tbody', {}, shown.map(row))))
  }
  errorsOnly.addEventListener('change', render)

  loading(body)
  const drawn = {}
  const poll = every(5000, async () => {
    try {
      entries = await api('/api/audit?limit=50')
    } catch (err) {
      entries = null
      drawn.last = null
      meta.textContent = ''
      return failure(body, err, 'GET /api/audit', () => poll.now())
    }
    if (changed(drawn, entries)) render()
  })
  return poll
}
