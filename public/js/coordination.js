// Coordination: the agents with their hook sessions, the edits hooks blocked, held
// locks and path reservations by project, each with its holder's name and liveness,
// and a force-release. Redrawn at once when the event stream reports a grant, a
// release, a blocked edit or a change of liveness; polled every 10 s as a fallback
// (and to age the expiry times). #reservation=ID marks that reservation (the task
// board links here).

import { api, onTokenChange } from './api.js'
import { startShell } from './shell.js'
import { follow } from './stream.js'
import { agentsPanel, blockedPanel } from './hook-panels.js'
import { cell, changed, every, failure, fill, h, loading, stateBox, timeAgo } from './ui.js'

const REFRESH_ON = /^(lock|reservation)\.|^instance\.(stale|deregistered|registered)$/
const CONFIRM_MS = 4000

/** Liveness as a badge: a stale or gone holder's grants are about to go. */
const liveness = (status) =>
  h('span', { class: `badge ${status === 'active' ? 'ok' : status === 'stale' ? 'warn' : 'bad'}`, text: status || 'unknown' })

const holderCell = (name, id, status) =>
  cell('Holder', { class: 'name-cell' },
    h('div', { class: 'wrap-any' }, h('span', { text: name || '(gone)' }), ' ', liveness(status)),
    h('div', { class: 'sub mono', title: id, text: String(id).slice(0, 8) }))

const expiry = (iso) => (iso ? h('span', {}, 'expires ', timeAgo(iso)) : h('span', { class: 'sub', text: 'no TTL' }))

/** A button that asks to be clicked twice: a forced release takes the grant from a live agent. */
function forceButton(label, run) {
  let armed = null
  const btn = h('button', { class: 'btn small danger', type: 'button', 'data-needs': 'admin', text: label })
  btn.addEventListener('click', async () => {
    if (!armed) {
      btn.textContent = 'Confirm release'
      armed = setTimeout(() => ((armed = null), (btn.textContent = label)), CONFIRM_MS)
      return
    }
    clearTimeout(armed)
    btn.disabled = true
    btn.textContent = 'Releasing…'
    try {
      await run()
    } catch (err) {
      btn.disabled = false
      btn.textContent = label
      btn.title = err.message
      btn.after(h('div', { class: 'inline-error', role: 'alert', text: err.message }))
    }
  })
  return btn
}

function locksPanel() {
  const section = document.getElementById('locks')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const drawn = {}
  loading(body)
  const poll = every(10_000, async () => {
    let locks
    try {
      locks = await api('/api/locks')
    } catch (err) {
      drawn.last = null
      meta.textContent = ''
      return failure(body, err, 'GET /api/locks', () => poll.now())
    }
    if (!changed(drawn, locks)) return
    meta.textContent = locks.length ? `${locks.length} held` : ''
    if (!locks.length)
      return stateBox(body, 'empty', 'No locks held', ['Agents take them with ', h('code', { text: 'PUT /api/locks/{name}' }), ' or ', h('code', { text: 'muster lock acquire' }), '.'])
    const rows = locks.flatMap((lock) =>
      lock.holders.map((hd, i) =>
        h('tr', { class: hd.instance_status === 'active' ? null : 'stale', dataset: { lock: lock.name } },
          cell('Lock', { class: 'wrap-any' },
            i === 0 ? h('div', { class: 'mono', text: lock.name }) : null,
            i === 0 && lock.limit > 1 ? h('div', { class: 'sub', text: `${lock.holders.length} of ${lock.limit} slots` }) : null),
          holderCell(hd.instance_name, hd.instance_id, hd.instance_status),
          cell('Grant', {},
            h('div', { class: 'grant-line' }, 'fence ', h('b', { text: String(hd.fence) }), ' · ', timeAgo(hd.acquired_at)),
            h('div', { class: 'sub' }, expiry(hd.expires_at)),
            hd.reason ? h('div', { class: 'sub wrap-any', text: hd.reason }) : null),
          cell('', { class: 'nowrap' }, i === 0 ? forceButton('Force release', async () => {
            await api(`/api/locks/${lock.name.split('/').map(encodeURIComponent).join('/')}?force=1`, { method: 'DELETE' })
            poll.now()
          }) : null))))
    fill(body, h('table', { class: 'data cards' },
      h('thead', {}, h('tr', {}, ['Lock', 'Holder', 'Grant', ''].map((t) => h('th', { text: t })))),
      h('tbody', {}, rows)))
  })
  return poll
}

function reservationsPanel() {
  const section = document.getElementById('reservations')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const drawn = {}
  loading(body)
  const poll = every(10_000, async () => {
    let list, instances
    try {
      ;[list, instances] = await Promise.all([api('/api/reservations'), api('/api/instances')])
    } catch (err) {
      drawn.last = null
      meta.textContent = ''
      return failure(body, err, 'GET /api/reservations', () => poll.now())
    }
    const who = new Map(instances.map((i) => [i.id, i]))
    if (!changed(drawn, { list, who: [...who.values()].map((i) => [i.id, i.name, i.status]), marked: markedReservation() })) return
    const projects = [...new Set(list.map((r) => r.project))].sort()
    meta.textContent = list.length ? `${list.length} in ${projects.length} project${projects.length === 1 ? '' : 's'}` : ''
    if (!list.length)
      return stateBox(body, 'empty', 'No paths reserved', ['Agents reserve globs with ', h('code', { text: 'POST /api/reservations' }), ' or ', h('code', { text: 'muster reserve' }), '.'])
    fill(body, projects.map((project) => {
      const mine = list.filter((r) => r.project === project)
      return h('div', { class: 'project-group', dataset: { project } },
        h('h3', { class: 'mono', text: `${project} · ${mine.length}` }),
        h('table', { class: 'data cards' },
          h('thead', {}, h('tr', {}, ['Paths', 'Holder', 'Grant', ''].map((t) => h('th', { text: t })))),
          h('tbody', {}, mine.map((r) => {
            const holder = who.get(r.instance_id)
            const marked = r.id === markedReservation()
            return h('tr', { class: [holder?.status === 'active' ? null : 'stale', marked ? 'selected' : null].filter(Boolean).join(' ') || null, dataset: { id: r.id } },
              cell('Paths', { class: 'wrap-any' },
                r.paths.map((p) => h('span', { class: 'chip mono', text: p })),
                h('div', { class: 'sub' }, h('span', { class: `badge ${r.exclusive ? 'accent' : ''}`, text: r.exclusive ? 'exclusive' : 'shared' }))),
              holderCell(holder?.name, r.instance_id, holder?.status ?? 'gone'),
              cell('Grant', {},
                h('div', { class: 'grant-line' }, 'fence ', h('b', { text: String(r.fence) }), ' · ', timeAgo(r.created_at)),
                h('div', { class: 'sub' }, expiry(r.expires_at)),
                r.reason ? h('div', { class: 'sub wrap-any', text: r.reason }) : null),
              cell('', { class: 'nowrap' }, forceButton('Force release', async () => {
                await api(`/api/reservations/${encodeURIComponent(r.id)}?force=1`, { method: 'DELETE' })
                poll.now()
              })))
          }))))
    }))
    const marked = body.querySelector('tr.selected')
    if (marked && !scrolled) (scrolled = true), marked.scrollIntoView({ block: 'center' })
  })
  return poll
}

/** The reservation named by #reservation=ID, scrolled to once when it first shows. */
const markedReservation = () => new URLSearchParams(location.hash.slice(1)).get('reservation')
let scrolled = false

startShell()
const [agents, blocked, locks, reservations] = [agentsPanel(), blockedPanel(), locksPanel(), reservationsPanel()]
const refresh = () => [agents, blocked, locks, reservations].forEach((p) => p.now())

const due = new Set()
let soon = null
/** The events of one unit arrive together (a holder gone stale releases many grants): each panel they concern reads once, after them. */
function refreshSoon(...panels) {
  for (const p of panels) due.add(p)
  clearTimeout(soon)
  soon = setTimeout(() => {
    const now = [...due]
    due.clear()
    for (const p of now) p.now()
  }, 40)
}

onTokenChange(refresh)
follow({
  pattern: '*',
  live: 'Following lock, reservation, blocked-edit and liveness events',
  fallback: 'the panels still refresh every 10 s',
  onOpen: refresh, // whatever happened while the socket was down
  onEvent: (e) => {
    if (e.topic === 'edit.blocked') return blocked.event(e)
    if (e.topic.startsWith('instance.')) refreshSoon(agents)
    if (REFRESH_ON.test(e.topic)) refreshSoon(locks, reservations)
  },
})
window.addEventListener('hashchange', () => ((scrolled = false), reservations.now()))
