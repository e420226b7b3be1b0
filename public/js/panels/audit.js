// Audit entries (GET /api/audit, newest first), a page of 50 at a time with
// Newer / Older (offset); failed calls are tinted, instance actors named.

import { api } from '../api.js'
import { instanceNames, who } from '../names.js'
import { cell, changed, every, failure, fill, h, loading, stateBox, timeAgo } from '../ui.js'

const PAGE = 50

const INSTANCE_PATH = /^(instances\/)([0-9a-f-]{36})(\/.*)?$/i

/** The resource path, with an instance id in it shown as the instance's name. */
function resource(path, names) {
  const m = INSTANCE_PATH.exec(path)
  return m ? [m[1], who(names, m[2]), m[3] ?? ''] : path
}

function row(e, names) {
  const failed = e.outcome !== 'success'
  return h('tr', { class: failed ? 'failed' : null, dataset: { id: e.id } },
    cell('Action', {},
      h('div', { class: 'mono ellipsis', title: e.action, text: e.action }),
      h('div', { class: 'sub mono wrap-any', title: e.resource }, resource(e.resource, names))),
    cell('Who · when', {},
      h('div', { class: 'ellipsis' }, who(names, e.actor)),
      h('div', { class: 'sub' }, timeAgo(e.timestamp))),
    cell('Outcome', {},
      h('span', { class: `badge ${failed ? 'bad' : 'ok'}`, text: e.outcome }),
      e.detail ? h('div', { class: 'sub wrap-any', text: e.detail }) : null),
  )
}

export function auditPanel() {
  const section = document.getElementById('audit')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const errorsOnly = document.getElementById('audit-errors')
  let entries = null
  let names = new Map()
  let offset = 0

  const pager = () => h('div', { class: 'pager' },
    h('button', { class: 'btn small', type: 'button', disabled: offset === 0, onclick: () => page(-PAGE), text: '← Newer' }),
    h('span', { class: 'note', text: entries.length ? `entries ${offset + 1}–${offset + entries.length}` : `nothing after entry ${offset}` }),
    h('button', { class: 'btn small', type: 'button', disabled: entries.length < PAGE, onclick: () => page(PAGE), text: 'Older →' }))

  const render = () => {
    if (!entries) return
    const shown = errorsOnly.checked ? entries.filter((e) => e.outcome !== 'success') : entries
    meta.textContent = offset ? `entries ${offset + 1}–${offset + entries.length}` : `latest ${entries.length}`
    if (entries.length === 0 && offset === 0)
      return stateBox(body, 'empty', 'No audit entries yet', 'Every mutating API call is recorded here: who did what, to which resource, and whether it worked.')
    fill(body,
      entries.length === PAGE || offset ? pager() : null,
      shown.length === 0
        ? stateBox(h('div'), 'empty', entries.length ? 'No failed calls on this page' : 'No older entries')
        : h('table', { class: 'data cards fixed audit-table' },
          h('colgroup', {}, h('col', { class: 'c-action' }), h('col', { class: 'c-who' }), h('col', { class: 'c-outcome' })),
          h('thead', {}, h('tr', {}, ['Action · resource', 'Who · when', 'Outcome'].map((t) => h('th', { text: t })))),
          h('tbody', {}, shown.map((e) => row(e, names)))))
  }
  errorsOnly.addEventListener('change', render)

  const page = (delta) => {
    offset = Math.max(0, offset + delta)
    drawn.last = null
    loading(body)
    poll.now()
  }

  loading(body)
  const drawn = {}
  const poll = every(5000, async () => {
    try {
      ;[entries, names] = await Promise.all([api(`/api/audit?limit=${PAGE}&offset=${offset}`), instanceNames()])
    } catch (err) {
      entries = null
      drawn.last = null
      meta.textContent = ''
      return failure(body, err, 'GET /api/audit', () => poll.now())
    }
    if (changed(drawn, [entries, [...names].map(([id, i]) => [id, i.name])])) render()
  })
  return poll
}
