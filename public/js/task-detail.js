// One task in full, over the board (a card's title opens it; ?task=ID in the URL too):
// what a card has no room for. The files it will touch, the reservation its claim
// holds (linked to the coordination page), the notes each attempt left for the next,
// its attempts and history (from the task's events), payload and result, and Retry
// for a failed or cancelled task.
//   GET /api/tasks/{id}, GET /api/reservations/{id} (404: released), GET /api/instances
//   GET /api/events/history?topic=task.*  the task's events (the history has no filter
//                                         by task, so the latest HISTORY_SCAN are read)
//   POST /api/tasks/{id}/retry

import { api } from './api.js'
import { claimerLine, errorLine, retry, retryable, timingLine } from './task-status.js'
import { act, failure, fill, fullTime, h, loading, pretty, timeAgo } from './ui.js'

/** Task events read to find one task's history: the newest this many of every task. */
const HISTORY_SCAN = 1000

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

/** Counts the reads refreshDetail started: only the newest may draw. */
let reads = 0

export async function refreshDetail() {
  const id = current
  if (id === null) return
  // A burst of events starts a read each; one started earlier can finish later, and its older
  // answer must not draw over a newer one (a note added, then gone until the next event).
  const read = ++reads
  let task, instances, reservation, events
  try {
    ;[task, instances, events] = await Promise.all([
      api(`/api/tasks/${id}`),
      api('/api/instances').catch(() => []),
      api(`/api/events/history?topic=task.*&last=${HISTORY_SCAN}`).catch(() => null),
    ])
    reservation = task.reservation_id ? await api(`/api/reservations/${enc(task.reservation_id)}`).catch((err) => (err.status === 404 ? null : undefined)) : undefined
  } catch (err) {
    if (id === current && read === reads) failure(body, err, 'GET /api/tasks/{id}', refreshDetail)
    return
  }
  if (id !== current || read !== reads) return
  const mine = events && events.filter((e) => e.data?.id === id).sort((a, b) => a.id - b.id)
  draw(task, new Map(instances.map((i) => [i.id, i])), reservation, mine, events?.length === HISTORY_SCAN)
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
    h('span', { class: 'sub' }, `held by ${nameOf(byId, r.instance_id)}`, r.expires_at ? [' · expires ', timeAgo(r.expires_at)] : ' · no TTL'),
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

/** What each event says happened to the task, as a person reads it. */
const VERB = {
  'task.created': 'created',
  'task.claimed': 'claimed',
  'task.done': 'done',
  'task.failed': 'failed',
  'task.requeued': 'back to ready',
  'task.cancelled': 'cancelled',
  'task.retried': 'retried',
  'task.unblocked': 'unblocked',
  'task.noted': 'note left',
}
const REASON = {
  nack: 'nacked',
  timeout: 'not acked in time',
  holder_stale: 'claimer went stale',
  holder_deregistered: 'claimer deregistered',
  dependency: 'a dependency failed',
}

/**
 * Attempts from the events: each claim opens one, the next done, requeue, failure or
 * cancel closes it; a retry starts the count again.
 */
function attemptsOf(events, byId) {
  const runs = []
  let open = null
  for (const e of events) {
    const who = e.data?.instance_id ? nameOf(byId, e.data.instance_id) : null
    if (e.topic === 'task.claimed') {
      open = { n: runs.filter((r) => !r.reset).length + 1, by: who, from: e.created_at, outcome: 'running', until: null }
      runs.push(open)
    } else if (e.topic === 'task.retried') {
      open = null
      runs.push({ reset: true, at: e.created_at, by: who })
      for (const r of runs) r.before = true
    } else if (open && ['task.done', 'task.requeued', 'task.failed', 'task.cancelled'].includes(e.topic)) {
      open.outcome = VERB[e.topic] + (e.data?.reason ? ` (${REASON[e.data.reason] ?? e.data.reason})` : '')
      open.until = e.created_at
      open = null
    }
  }
  return runs
}

function attemptsPart(task, events, byId) {
  const head = h('div', { class: 'facts' }, h('span', {}, h('b', { text: String(task.attempts) }), ` of ${task.max_attempts} attempts used`))
  if (!events) return [head]
  const runs = attemptsOf(events, byId).filter((r) => !r.reset)
  if (!runs.length) return [head, h('div', { class: 'sub', text: 'Not claimed yet.' })]
  return [head, h('table', { class: 'data attempts' },
    h('thead', {}, h('tr', {}, ['#', 'Claimed by', 'Started', 'Ended'].map((t) => h('th', { text: t })))),
    h('tbody', {}, runs.map((r) => h('tr', { class: r.before ? 'before-retry' : null },
      h('td', { text: String(r.n) }),
      h('td', { text: r.by ?? '—' }),
      h('td', {}, timeAgo(r.from)),
      h('td', {}, r.until ? [r.outcome, ' ', timeAgo(r.until)] : h('span', { class: 'badge ok', text: r.outcome }))))))]
}

function historyPart(events, byId, truncated) {
  if (!events) return h('div', { class: 'sub', text: 'The event history could not be read.' })
  if (!events.length) return h('div', { class: 'sub', text: 'No events of this task are left in the history (older ones are pruned).' })
  return [h('ol', { class: 'task-history' }, [...events].reverse().map((e) =>
    h('li', { dataset: { topic: e.topic } },
      h('b', { text: VERB[e.topic] ?? e.topic.replace(/^task\./, '') }),
      e.data?.instance_id ? h('span', {}, ' by ', h('span', { class: 'strong', text: nameOf(byId, e.data.instance_id) })) : null,
      e.data?.reason ? h('span', { class: 'sub', text: ` · ${REASON[e.data.reason] ?? e.data.reason}` }) : null,
      e.topic === 'task.retried' && e.data?.previous_status ? h('span', { class: 'sub', text: ` · was ${e.data.previous_status} after ${e.data.previous_attempts} attempt${e.data.previous_attempts === 1 ? '' : 's'}` }) : null,
      ' ', timeAgo(e.created_at)))),
  truncated ? h('div', { class: 'sub', text: `From the latest ${HISTORY_SCAN} task events of the server.` }) : null]
}

/** One line saying what state the task is in and what happens next. */
function statusPart(task, byId) {
  const explain = {
    blocked: `waits for ${task.depends_on.map((d) => `#${d}`).join(', ') || 'its dependencies'}`,
    ready: task.available_at && Date.parse(task.available_at) > Date.now() ? 'waits for its delay to pass' : 'waits for a claimer',
    claimed: 'being worked on',
    done: 'acked',
    failed: /^dependency \d+/.test(task.last_error ?? '') ? 'a task it depends on did not finish; retry that one first' : `no attempts left (${task.attempts} of ${task.max_attempts} used); retry starts it over`,
    cancelled: 'stopped by hand; retry starts it over',
  }[task.status]
  return h('div', { class: 'status-line' },
    h('span', { class: `badge status-${task.status}`, text: task.status }), ' ', h('span', { class: 'sub', text: explain ?? '' }),
    claimerLine(task, byId), timingLine(task), errorLine(task))
}

function retryPart(task) {
  if (!retryable(task)) return null
  const out = h('div')
  const b = h('button', { class: 'btn primary', type: 'button', id: 'task-retry', text: 'Retry' })
  b.addEventListener('click', () => act(b, 'Retrying…', out, async () => {
    const t = await retry(task)
    refreshDetail()
    return `Task #${t.id} is ${t.status} again, attempts reset.`
  }))
  return h('div', { class: 'row retry-row', 'data-needs': 'write' }, b, h('span', { class: 'sub', text: 'Ready again with its attempts reset; notes and history stay.' }), out)
}

function draw(task, byId, reservation, events, truncated) {
  fill(dialog.querySelector('h2'), `Task #${task.id} · `, h('span', { text: task.title }))
  fill(body,
    statusPart(task, byId),
    retryPart(task),
    h('div', { class: 'facts' },
      h('span', {}, 'queue ', h('b', { class: 'mono', text: task.queue })),
      task.priority ? h('span', {}, 'priority ', h('b', { text: String(task.priority) })) : null,
      task.requires?.length ? h('span', {}, 'requires ', task.requires.map((c) => h('span', { class: 'chip', text: c }))) : null,
      h('span', { title: fullTime(task.created_at) }, 'created ', timeAgo(task.created_at)),
      h('span', {}, 'updated ', timeAgo(task.updated_at))),
    section('Payload', task.payload !== null && task.payload !== undefined ? h('pre', { class: 'value', id: 'task-payload', text: pretty(JSON.stringify(task.payload)) }) : h('div', { class: 'sub', text: 'None.' })),
    section('Result', task.result !== null && task.result !== undefined ? h('pre', { class: 'value', id: 'task-result', text: pretty(JSON.stringify(task.result)) }) : h('div', { class: 'sub', text: task.status === 'done' ? 'Acked without a result.' : 'None yet: set when the task is acked.' })),
    section(`Notes${task.notes?.length ? ` · ${task.notes.length}` : ''}`, notesPart(task.notes)),
    section('Attempts', attemptsPart(task, events, byId)),
    section('Files',
      task.project ? h('div', { class: 'project' }, 'project ', h('b', { class: 'mono', text: task.project })) : h('div', { class: 'sub', text: 'No project.' }),
      task.paths?.length ? h('div', { class: 'paths' }, task.paths.map((p) => h('span', { class: 'chip mono', text: p }))) : null),
    section('Reservation', reservationPart(task, byId, reservation)),
    h('section', { class: 'detail-section', id: 'task-history' }, h('h3', { text: 'History' }), historyPart(events, byId, truncated)))
}
