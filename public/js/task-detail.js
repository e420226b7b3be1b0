// One task in full, over the board (a card's title opens it; ?task=ID in the URL too):
// what a card has no room for. The files it will touch, the reservation its claim
// holds (linked to the coordination page), the notes each attempt left for the next,
// payload and result.
//   GET /api/tasks/{id}, GET /api/reservations/{id} (404: released), GET /api/instances

import { api } from './api.js'
import { failure, fill, fullTime, h, loading, pretty, timeAgo } from './ui.js'

const enc = encodeURIComponent
let dialog = null
let body = null
/** The id of the task shown, or null when the detail is closed. */
let current = null

function ensureDialog() {
  if (dialog) return
  body = h('div', { class: 'detail-body' })
  dialog = h('dialog', { id: 'task-detail', class: 'task-detail', 'aria-labelledby': 'task-detail-title' },
    h('div', { class: 'detail-box' },
      h('header', {},
        h('h2', { id: 'task-detail-title', text: 'Task' }),
        h('button', { class: 'btn small', type: 'button', onclick: closeDetail, text: 'Close' })),
      body))
  dialog.addEventListener('close', () => current !== null && closeDetail())
  // A click on the backdrop (outside the box) closes it, as Esc does.
  dialog.addEventListener('click', (e) => e.target === dialog && closeDetail())
  document.body.append(dialog)
}

function setUrl(id) {
  const url = new URL(location.href)
  if (id === null) url.searchParams.delete('task')
  else url.searchParams.set('task', String(id))
  history.replaceState(null, '', url)
}

export function openDetail(id) {
  ensureDialog()
  current = id
  setUrl(id)
  fill(dialog.querySelector('h2'), `Task #${id}`)
  loading(body)
  if (!dialog.open) dialog.showModal()
  refreshDetail()
}

export function closeDetail() {
  current = null
  setUrl(null)
  if (dialog?.open) dialog.close()
}

/** Whether an event about task `id` concerns the open detail. */
export const detailShows = (id) => current !== null && current === id

export async function refreshDetail() {
  const id = current
  if (id === null) return
  let task, instances, reservation
  try {
    ;[task, instances] = await Promise.all([api(`/api/tasks/${id}`), api('/api/instances').catch(() => [])])
    reservation = task.reservation_id ? await api(`/api/reservations/${enc(task.reservation_id)}`).catch((err) => (err.status === 404 ? null : undefined)) : undefined
  } catch (err) {
    if (id === current) failure(body, err, 'GET /api/tasks/{id}', refreshDetail)
    return
  }
  if (id !== current) return
  draw(task, new Map(instances.map((i) => [i.id, i])), reservation)
}

const nameOf = (byId, id) => byId.get(id)?.name ?? (id ? `gone ${String(id).slice(0, 8)}` : '—')
const section = (title, ...children) => h('section', { class: 'detail-section' }, h('h3', { text: title }), ...children)

function reservationPart(task, byId, r) {
  if (!task.reservation_id) {
    const why = task.paths?.length ? 'None held: the files are reserved while the task is claimed.' : 'None: the task names no files.'
    return h('div', { class: 'sub', text: why })
  }
  const link = h('a', { class: 'mono', href: `/coordination#reservation=${enc(task.reservation_id)}`, title: 'Show it on the coordination page', text: task.reservation_id })
  if (r === null) return h('div', { class: 'reservation' }, link, ' ', h('span', { class: 'badge warn', text: 'released' }))
  if (!r) return h('div', { class: 'reservation' }, link)
  return h('div', { class: 'reservation' },
    link, ' ',
    h('span', { class: `badge ${r.exclusive ? 'accent' : ''}`, text: r.exclusive ? 'exclusive' : 'shared' }), ' ',
    h('span', { class: 'sub' }, `held by ${nameOf(byId, r.instance_id)}`, r.expires_at ? ` · expires ${new Date(r.expires_at).toLocaleTimeString()}` : ' · no TTL'),
    r.reason ? h('div', { class: 'sub', text: `reason: ${r.reason}` }) : null)
}

function notesPart(notes) {
  if (!notes?.length) return h('div', { class: 'sub', text: 'No notes yet. An attempt leaves one with muster task note <id> or POST /api/tasks/{id}/notes.' })
  return h('ol', { class: 'notes' }, notes.map((n) =>
    h('li', { dataset: { attempt: n.attempt } },
      h('div', { class: 'note-head' },
        h('span', { class: 'badge accent', text: `attempt ${n.attempt}` }),
        h('b', { class: 'by', text: n.by }),
        timeAgo(n.at)),
      h('div', { class: 'note-text', text: n.text }))))
}

function draw(task, byId, reservation) {
  const claimer = task.claimed_by ? nameOf(byId, task.claimed_by) : null
  fill(dialog.querySelector('h2'), `Task #${task.id} · `, h('span', { text: task.title }))
  fill(body,
    h('div', { class: 'facts' },
      h('span', {}, 'status ', h('b', { class: 'status', text: task.status })),
      h('span', {}, 'queue ', h('b', { class: 'mono', text: task.queue })),
      h('span', {}, 'attempts ', h('b', { text: `${task.attempts}/${task.max_attempts}` })),
      task.priority ? h('span', {}, 'priority ', h('b', { text: String(task.priority) })) : null,
      claimer ? h('span', {}, task.status === 'claimed' ? 'claimed by ' : 'last claimed by ', h('b', { text: claimer })) : null,
      h('span', { title: fullTime(task.created_at) }, 'created ', timeAgo(task.created_at))),
    section('Files',
      task.project ? h('div', { class: 'project' }, 'project ', h('b', { class: 'mono', text: task.project })) : h('div', { class: 'sub', text: 'No project.' }),
      task.paths?.length ? h('div', { class: 'paths' }, task.paths.map((p) => h('span', { class: 'chip mono', text: p }))) : null),
    section('Reservation', reservationPart(task, byId, reservation)),
    section(`Notes${task.notes?.length ? ` · ${task.notes.length}` : ''}`, notesPart(task.notes)),
    task.last_error ? section('Last error', h('div', { class: 'error', text: task.last_error })) : null,
    task.payload !== null && task.payload !== undefined ? section('Payload', h('pre', { class: 'value', text: pretty(JSON.stringify(task.payload)) })) : null,
    task.result !== null && task.result !== undefined ? section('Result', h('pre', { class: 'value', text: pretty(JSON.stringify(task.result)) })) : null)
}
