// Entry point of the task board (GET /tasks). Everything goes through the API:
//   queues and counts   GET    /api/queues
//   one column          GET    /api/queues/{queue}/tasks?status=S&limit=100
//   claimer liveness    GET    /api/instances (name and status by id)
//   cancel              DELETE /api/tasks/{id}
//   retry               POST   /api/tasks/{id}/retry (failed or cancelled tasks)
//   one task's detail   GET    /api/tasks/{id} (its files, reservation and notes)
// Live: every task.* and instance.* event from /api/events/subscribe redraws at
// once (a dropped socket reconnects with after_id); a slow poll is the safety net.

import { api, onTokenChange } from './api.js'
import { startShell } from './shell.js'
import { follow } from './stream.js'
import { every, failure, fill, h, int, loading, stateBox, timeAgo } from './ui.js'
import { detailShows, openDetail, refreshDetail } from './task-detail.js'
import { claimerLine, errorLine, retry, retryable, timingLine } from './task-status.js'

const STATUSES = ['blocked', 'ready', 'claimed', 'done', 'failed', 'cancelled']
const PER_COLUMN = 100
const POLL_MS = 15000
const enc = encodeURIComponent

startShell()

const els = {
  queues: document.querySelector('#queues .queue-list'),
  queuesMeta: document.querySelector('#queues .meta'),
  boardTitle: document.getElementById('board-title'),
  boardMeta: document.querySelector('#board .meta'),
  board: document.querySelector('#board .board-body'),
}

let queue = new URLSearchParams(location.search).get('queue') || ''
let queues = []
let drawnQueues = ''
let drawnBoard = ''
/** Tasks an event touched since the last draw: their cards flash once. */
let fresh = new Set()

// ---- queues ------------------------------------------------------------------------

const COUNT_BADGES = { ready: 'accent', claimed: 'ok', blocked: '', failed: 'bad' }

function countBadges(counts) {
  return Object.entries(COUNT_BADGES)
    .filter(([status]) => counts[status] > 0)
    .map(([status, cls]) => h('span', { class: `badge ${cls}`, title: status, text: `${int(counts[status])} ${status}` }))
}

async function loadQueues() {
  try {
    queues = await api('/api/queues')
  } catch (err) {
    drawnQueues = ''
    els.queuesMeta.textContent = ''
    failure(els.queues, err, 'GET /api/queues', refresh)
    throw err
  }
  if (!queue && queues.length) select(queues[0].queue, false)
  const text = JSON.stringify([queues, queue])
  if (text === drawnQueues) return
  drawnQueues = text
  els.queuesMeta.textContent = queues.length ? `${queues.length}` : ''
  if (!queues.length)
    return stateBox(els.queues, 'empty', 'No queues yet',
      ['A queue appears with its first task: ', h('code', { text: 'POST /api/queues/{queue}/tasks' }), ' or ', h('code', { text: 'muster task add' }), '.'])
  fill(els.queues, queues.map((q) =>
    h('li', {},
      h('button', { type: 'button', 'aria-current': String(q.queue === queue), dataset: { queue: q.queue }, onclick: () => select(q.queue) },
        h('span', { class: 'name', text: q.queue }),
        h('span', { class: 'counts' }, countBadges(q.counts))))))
}

function select(name, redraw = true) {
  queue = name
  const url = new URL(location.href)
  url.searchParams.set('queue', name)
  history.replaceState(null, '', url)
  if (!redraw) return
  drawnBoard = ''
  fresh = new Set()
  loading(els.board)
  refresh()
}

// ---- the board ---------------------------------------------------------------------

function card(task, instances) {
  const open = task.status !== 'done' && task.status !== 'cancelled' && task.status !== 'failed'
  return h('li', { class: `task-card${fresh.has(task.id) ? ' fresh' : ''}`, dataset: { id: task.id, status: task.status } },
    h('a', { class: 'title', href: `?queue=${enc(task.queue)}&task=${task.id}`, title: 'Files, reservation, notes and payload', onclick: (e) => (e.preventDefault(), openDetail(task.id)), text: task.title }),
    h('div', { class: 'facts' },
      h('span', { class: 'tid', text: `#${task.id}` }),
      task.priority ? h('span', { class: 'badge accent', text: `priority ${task.priority}` }) : null,
      h('span', { class: 'attempts', title: 'claims so far / max_attempts', text: `attempts ${task.attempts}/${task.max_attempts}` }),
      task.depends_on.length ? h('span', { text: `after ${task.depends_on.map((d) => `#${d}`).join(', ')}` }) : null),
    task.requires.length ? h('div', {}, task.requires.map((c) => h('span', { class: 'chip', title: 'required capability', text: c }))) : null,
    task.paths?.length
      ? h('div', { class: 'files', title: `files in project ${task.project}` },
        h('span', { class: 'project mono', text: task.project }), task.paths.map((p) => h('span', { class: 'chip mono', text: p })))
      : null,
    task.notes?.length ? h('div', { class: 'facts' }, h('span', { class: 'badge', text: `${task.notes.length} note${task.notes.length === 1 ? '' : 's'}` })) : null,
    claimerLine(task, instances),
    timingLine(task),
    errorLine(task),
    h('div', { class: 'facts' }, 'updated ', timeAgo(task.updated_at)),
    open ? h('div', { class: 'actions' }, h('button', { class: 'btn small danger', type: 'button', 'data-needs': 'write', onclick: () => cancel(task), text: 'Cancel' })) : null,
    retryable(task) ? h('div', { class: 'actions' }, h('button', { class: 'btn small', type: 'button', 'data-needs': 'write', onclick: (e) => retryFromBoard(task, e.currentTarget), text: 'Retry' })) : null)
}

function column(status, tasks, total, instances) {
  return h('section', { class: `column ${status}`, dataset: { status } },
    h('h3', {}, h('span', { text: status }), h('span', { class: 'count', text: int(total) })),
    h('ol', {},
      tasks.length ? tasks.map((t) => card(t, instances)) : h('li', { class: 'none', text: 'none' }),
      total > tasks.length ? h('li', { class: 'more', text: `${int(total - tasks.length)} more` }) : null))
}

async function loadBoard() {
  fill(els.boardTitle, queue ? ['Task board · ', h('span', { class: 'mono', text: queue })] : 'Task board')
  if (!queue) {
    drawnBoard = ''
    els.boardMeta.textContent = ''
    return stateBox(els.board, 'empty', 'No queue selected', 'Pick a queue on the left once tasks exist.')
  }
  let columns, instances
  try {
    ;[columns, instances] = await Promise.all([
      Promise.all(STATUSES.map((s) => api(`/api/queues/${enc(queue)}/tasks?status=${s}&limit=${PER_COLUMN}`))),
      api('/api/instances').catch(() => []),
    ])
  } catch (err) {
    drawnBoard = ''
    els.boardMeta.textContent = ''
    return failure(els.board, err, 'GET /api/queues/{queue}/tasks', refresh)
  }
  const text = JSON.stringify([queue, columns, instances.map((i) => [i.id, i.name, i.status])])
  if (text === drawnBoard && !fresh.size) return
  drawnBoard = text
  const counts = queues.find((q) => q.queue === queue)?.counts ?? {}
  const byId = new Map(instances.map((i) => [i.id, i]))
  const open = (counts.ready ?? 0) + (counts.claimed ?? 0) + (counts.blocked ?? 0)
  els.boardMeta.textContent = `${int(open)} open`
  fill(els.board, h('div', { class: 'board' }, STATUSES.map((s, i) => column(s, columns[i], Math.max(counts[s] ?? 0, columns[i].length), byId))))
  fresh = new Set()
}

async function cancel(task) {
  const note = task.status === 'claimed' ? ' Its claim ends, and tasks that depend on it fail.' : ' Tasks that depend on it fail.'
  if (!confirm(`Cancel task #${task.id} “${task.title}”?${note}`)) return
  try {
    await api(`/api/tasks/${task.id}`, { method: 'DELETE' })
  } catch (err) {
    fill(els.boardMeta, h('span', { class: 'badge bad', role: 'alert', text: `Could not cancel #${task.id}: ${err.message}` }))
  }
  refresh()
}

async function retryFromBoard(task, button) {
  button.disabled = true
  try {
    await retry(task)
  } catch (err) {
    fill(els.boardMeta, h('span', { class: 'badge bad', role: 'alert', text: `Could not retry #${task.id}: ${err.message}` }))
  }
  refresh()
}

// ---- refresh and the live stream ------------------------------------------------------

const poll = every(POLL_MS, async () => {
  try {
    await loadQueues()
  } catch {
    return
  }
  await loadBoard()
})
function refresh() {
  poll.now()
}

let soon = null
/** Events come in bursts (a claim, then an ack): one redraw for each burst. */
function refreshSoon() {
  clearTimeout(soon)
  soon = setTimeout(refresh, 80)
}

follow({
  pattern: '*',
  live: 'Task and instance events redraw the board at once',
  fallback: `polling every ${POLL_MS / 1000} s`,
  onOpen: refresh,
  onEvent: (event) => {
    if (event.topic.startsWith('task.')) {
      if (event.data?.queue === queue) fresh.add(event.data.id)
      if (detailShows(event.data?.id)) refreshDetail()
      refreshSoon()
    } else if (event.topic.startsWith('instance.')) refreshSoon()
  },
})
const opened = Number(new URLSearchParams(location.search).get('task'))
if (Number.isInteger(opened) && opened > 0) openDetail(opened)
onTokenChange(refresh)
