// Messages (GET /messages): what agents and people wrote to each other, as threads.
//   threads       GET  /api/messages?limit=N[&q=WORDS]   newest first, grouped by thread here
//   one thread    GET  /api/threads/{thread}, then GET /api/messages/{id} for each receipt list
//   agent names   GET  /api/instances                     the form's quick picks
//   write         POST /api/messages                      no instance token: from "human"
// Live: message.sent, message.acked and message.overdue redraw at once. An unacked
// receipt turns overdue on the page the instant its deadline passes, not only when the
// server's event arrives.

import { api } from './api.js'
import { deadline, overdue } from './overdue.js'
import { startShell } from './shell.js'
import { follow } from './stream.js'
import { changed, clock, duration, every, failure, fill, fullTime, h, loading, outcome, parseDuration, stateBox, timeAgo } from './ui.js'

const LIST_LIMIT = 300
const POLL_MS = 15_000
const enc = encodeURIComponent

startShell()

const els = {
  threads: document.querySelector('#threads .thread-list'),
  threadsMeta: document.querySelector('#threads .meta'),
  search: document.getElementById('search'),
  threadTitle: document.getElementById('thread-title'),
  threadMeta: document.querySelector('#thread .meta'),
  thread: document.querySelector('#thread .thread-body'),
  form: document.getElementById('compose-form'),
}

const params = new URLSearchParams(location.search)
let selected = params.get('thread') || ''
let query = params.get('q') || ''
els.search.value = query
/** The open thread's messages, each with its receipts, oldest first. */
let shown = []
const threadsMemo = {}
const threadMemo = {}

function remember() {
  const url = new URL(location.href)
  for (const [k, v] of [['thread', selected], ['q', query]]) v ? url.searchParams.set(k, v) : url.searchParams.delete(k)
  history.replaceState(null, '', url)
}

// ---- the thread list -----------------------------------------------------------------

/** Messages newest first → threads, newest activity first (a thread is as recent as its last message). */
function threadsOf(list) {
  const byThread = new Map()
  for (const m of list) {
    if (!byThread.has(m.thread)) byThread.set(m.thread, { thread: m.thread, last: m.created_at, messages: [] })
    byThread.get(m.thread).messages.push(m)
  }
  return [...byThread.values()]
}

const IMPORTANCE = { urgent: 'bad', high: 'warn', low: '' }
const importanceBadge = (m) => (m.importance && m.importance !== 'normal' ? h('span', { class: `badge ${IMPORTANCE[m.importance] ?? ''}`, text: m.importance }) : null)
const recipients = (m) => (m.to?.[0] === '*' ? 'everyone' : (m.to ?? []).join(', '))

function threadItem(t) {
  const first = t.messages.at(-1)
  const people = [...new Set(t.messages.flatMap((m) => [m.from, ...(m.to ?? []).map((n) => (n === '*' ? 'everyone' : n))]))]
  const loudest = t.messages.find((m) => m.importance === 'urgent') ?? t.messages.find((m) => m.importance === 'high')
  return h('li', {},
    h('button', { type: 'button', 'aria-current': String(t.thread === selected), dataset: { thread: t.thread }, onclick: () => select(t.thread) },
      h('span', { class: 'subject', text: first.subject }),
      h('span', { class: 'when' }, timeAgo(t.last)),
      h('span', { class: 'people', text: people.join(', ') }),
      h('span', { class: 'facts' },
        h('span', { text: `${t.messages.length} message${t.messages.length === 1 ? '' : 's'}${query ? ' matching' : ''}` }),
        loudest ? importanceBadge(loudest) : null,
        t.messages.some((m) => m.ack_required) ? h('span', { class: 'badge', text: 'ack asked' }) : null)))
}

async function loadThreads() {
  let list
  try {
    list = await api(`/api/messages?limit=${LIST_LIMIT}${query ? `&q=${enc(query)}` : ''}`)
  } catch (err) {
    threadsMemo.last = null
    els.threadsMeta.textContent = ''
    failure(els.threads, err, 'GET /api/messages', refresh)
    return
  }
  const threads = threadsOf(list)
  if (!selected && threads.length && !query) select(threads[0].thread, false)
  if (!changed(threadsMemo, [list, selected])) return
  els.threadsMeta.textContent = threads.length ? `${threads.length}${list.length >= LIST_LIMIT ? '+' : ''}` : ''
  if (!threads.length)
    return query
      ? stateBox(els.threads, 'empty', 'No message matches', ['No message has every word of ', h('code', { text: query }), ' in its subject or body.'])
      : stateBox(els.threads, 'empty', 'No messages yet',
        ['Agents write with ', h('code', { text: 'muster send' }), ' or ', h('code', { text: 'POST /api/messages' }), '; a person with the form on this page.'])
  fill(els.threads, threads.map(threadItem))
}

function select(thread, redraw = true) {
  selected = thread
  remember()
  if (!redraw) return
  threadMemo.last = null
  fullReadAt = 0
  for (const b of els.threads.querySelectorAll('button[data-thread]')) b.setAttribute('aria-current', String(b.dataset.thread === thread))
  loading(els.thread)
  refresh()
}

// ---- one thread ----------------------------------------------------------------------

function receiptState(m, r) {
  if (r.acked_at) return h('span', { class: 'badge ok', title: fullTime(r.acked_at), text: `acked ${clock(r.acked_at)}` })
  if (overdue(m, r)) {
    const due = new Date(deadline(m)).toISOString()
    return h('span', { class: 'badge bad', title: `An ack was asked by ${fullTime(due)}`, text: `overdue since ${clock(due)}` })
  }
  if (r.delivered_at) return h('span', { class: 'badge accent', title: fullTime(r.delivered_at), text: `delivered ${clock(r.delivered_at)}` })
  return h('span', { class: 'badge', text: 'not delivered yet' })
}

function receiptsOf(m) {
  const list = m.receipts ?? []
  if (!list.length)
    return h('div', { class: 'receipts none', text: m.to?.[0] === '*' ? 'No agent has read it yet.' : 'No receipts.' })
  return h('ul', { class: 'receipts' }, list.map((r) =>
    h('li', { class: overdue(m, r) ? 'overdue' : r.acked_at ? 'acked' : null, dataset: { to: r.to } },
      h('span', { class: 'to', text: r.to }),
      receiptState(m, r),
      r.delivered_at && r.acked_at ? h('span', { class: 'sub', title: fullTime(r.delivered_at), text: `delivered ${clock(r.delivered_at)}` }) : null)))
}

function messageCard(m) {
  const due = deadline(m)
  const late = (m.receipts ?? []).some((r) => overdue(m, r))
  return h('article', { class: `message${late ? ' late' : ''}`, dataset: { id: m.id } },
    h('header', {},
      h('span', { class: 'from', text: m.from }),
      h('span', { class: 'arrow', text: '→' }),
      h('span', { class: 'to-list', text: recipients(m) }),
      importanceBadge(m),
      h('span', { class: 'spacer' }),
      h('span', { class: 'mid', text: `#${m.id}` }),
      timeAgo(m.created_at)),
    h('div', { class: 'subject', text: m.subject }),
    m.body ? h('div', { class: 'text', text: m.body }) : null,
    h('div', { class: 'facts' },
      m.reply_to ? h('span', { text: `reply to #${m.reply_to}` }) : null,
      m.ack_required
        ? h('span', { class: late ? 'bad-text' : null, title: due ? `due ${fullTime(new Date(due).toISOString())}` : null,
          text: due ? `ack asked within ${duration(m.ack_within_ms)}` : 'ack asked' })
        : null,
      h('button', { class: 'btn small link', type: 'button', 'data-needs': 'write', onclick: () => replyTo(m), text: 'Reply' })),
    receiptsOf(m))
}

let overdueTimer = null
/** Redraws the thread when the next ack deadline passes, so the receipt turns overdue right then. */
function armOverdue() {
  clearTimeout(overdueTimer)
  const now = Date.now()
  const next = shown.flatMap((m) => (m.receipts ?? []).filter((r) => !r.acked_at).map(() => deadline(m)))
    .filter((t) => t !== null && t > now)
  if (next.length) overdueTimer = setTimeout(drawThread, Math.min(...next) - now + 50)
}

function drawThread() {
  const first = shown[0]
  fill(els.threadTitle, 'Thread', first ? [' · ', h('span', { text: first.subject })] : null)
  const late = shown.reduce((n, m) => n + (m.receipts ?? []).filter((r) => overdue(m, r)).length, 0)
  fill(els.threadMeta, `${shown.length} message${shown.length === 1 ? '' : 's'}`, late ? [' · ', h('span', { class: 'badge bad', text: `${late} overdue` })] : null)
  fill(els.thread, h('div', { class: 'messages' }, shown.map(messageCard)))
  armOverdue()
}

// Receipts come one message at a time (GET /api/messages/{id}). An event re-reads only
// the message it names; the poll re-reads them all, since a delivery raises no event.
const RECEIPT_READS = 6
const withReceiptsOf = new Map() // message id → the message with its receipts
const stale = new Set() // ids an event named since their last read
let fullReadAt = 0

async function withReceipts(list) {
  const all = Date.now() - fullReadAt >= POLL_MS - 1000
  if (all) fullReadAt = Date.now()
  const queue = list.filter((m) => all || stale.has(m.id) || !withReceiptsOf.has(m.id))
  for (const m of queue) stale.delete(m.id) // an event during the read marks it again
  const worker = async () => {
    for (let m; (m = queue.shift()); ) withReceiptsOf.set(m.id, await api(`/api/messages/${m.id}`))
  }
  await Promise.all(Array.from({ length: RECEIPT_READS }, worker))
  return list.map((m) => withReceiptsOf.get(m.id))
}

async function loadThread() {
  if (!selected) {
    threadMemo.last = null
    shown = []
    fill(els.threadTitle, 'Thread')
    els.threadMeta.textContent = ''
    return stateBox(els.thread, 'empty', 'No thread selected', 'Pick a thread on the left, or write to agents with the form.')
  }
  let full
  try {
    const list = await api(`/api/threads/${enc(selected)}`)
    full = await withReceipts(list)
  } catch (err) {
    threadMemo.last = null
    els.threadMeta.textContent = ''
    if (err.status === 404 && !err.missingEndpoint) return stateBox(els.thread, 'empty', 'No such thread', ['Thread ', h('code', { text: selected }), ' has no messages.'])
    return failure(els.thread, err, 'GET /api/threads/{thread}', refresh)
  }
  if (!changed(threadMemo, [selected, full])) return
  shown = full
  drawThread()
}

// ---- the form ------------------------------------------------------------------------

const field = (name) => els.form.elements.namedItem(name)
const resultBox = els.form.querySelector('.compose-result')
const replyNote = els.form.querySelector('.reply-note')
let replying = null

const toNames = () => field('to').value.split(',').map((s) => s.trim()).filter(Boolean)

function addRecipient(name) {
  const names = toNames()
  if (name === '*') field('to').value = '*'
  else if (!names.includes(name)) field('to').value = [...names.filter((n) => n !== '*'), name].join(', ')
  field('to').focus()
}

function replyTo(m) {
  replying = m
  const others = m.from === 'human' ? m.to.filter((n) => n !== '*') : [m.from]
  field('to').value = (others.length ? others : m.to).join(', ')
  if (!/^re:/i.test(field('subject').value)) field('subject').value = /^re:/i.test(m.subject) ? m.subject : `Re: ${m.subject}`.slice(0, 200)
  fill(replyNote, `Replying to #${m.id} in this thread `, h('button', { class: 'btn small link', type: 'button', onclick: () => clearReply(), text: 'Cancel reply' }))
  replyNote.hidden = false
  field('body').focus()
}

function clearReply() {
  replying = null
  replyNote.hidden = true
}

field('ack_required').addEventListener('change', () => {
  field('ack_within').disabled = !field('ack_required').checked
})

/** The POST body from the form; throws a message a person can act on. */
function draft() {
  const to = toNames()
  if (!to.length) throw new Error('Name at least one recipient, or * for every agent.')
  if (to.includes('*') && to.length > 1) throw new Error('Send to * alone (every agent), or to names.')
  const subject = field('subject').value.trim()
  if (!subject) throw new Error('Write a subject.')
  const body = { to, subject, body: field('body').value, importance: field('importance').value, ack_required: field('ack_required').checked }
  const within = field('ack_within').value.trim()
  if (body.ack_required && within) {
    const ms = parseDuration(within)
    if (ms === null) throw new Error(`"${within}" is no duration: write e.g. 30s, 10m, 2h or 1d.`)
    if (to[0] === '*') throw new Error('An ack deadline needs named recipients: * has no list of who must ack.')
    body.ack_within_ms = ms
  }
  if (replying) body.reply_to = replying.id
  return body
}

els.form.addEventListener('submit', async (e) => {
  e.preventDefault()
  const button = els.form.querySelector('button[type=submit]')
  let body
  try {
    body = draft()
  } catch (err) {
    return outcome(resultBox, false, err.message)
  }
  button.disabled = true
  try {
    const sent = await api('/api/messages', { method: 'POST', body })
    outcome(resultBox, true, `Sent #${sent.id} to ${recipients(sent)}.`)
    // A fresh form for the next message; the recipients stay (a follow-up usually goes to the same agents).
    const to = field('to').value
    els.form.reset()
    field('to').value = to
    field('ack_within').disabled = true
    clearReply()
    select(sent.thread)
  } catch (err) {
    outcome(resultBox, false, err.status ? `${err.status}: ${err.message}` : err.message)
  } finally {
    button.disabled = false
  }
})

const picks = els.form.querySelector('.recipients')
const picksMemo = {}
async function loadAgents() {
  let agents
  try {
    agents = await api('/api/instances')
  } catch {
    agents = []
  }
  const names = [...new Set(agents.map((a) => a.name))].sort()
  if (!changed(picksMemo, names)) return
  fill(picks,
    names.map((n) => h('button', { class: 'chip pick', type: 'button', title: `Add ${n} to the recipients`, onclick: () => addRecipient(n), text: n })),
    h('button', { class: 'chip pick all', type: 'button', title: 'Every agent, now and later (*)', onclick: () => addRecipient('*'), text: 'everyone (*)' }))
}

// ---- refresh and the live stream -------------------------------------------------------

document.getElementById('search-form').addEventListener('submit', (e) => {
  e.preventDefault()
  query = els.search.value.trim()
  remember()
  loading(els.threads)
  threadsMemo.last = null
  refresh()
})

// The list first: with no thread chosen yet, it picks the newest one to open.
const poll = every(POLL_MS, () => Promise.all([loadThreads().then(loadThread), loadAgents()]))
function refresh() {
  poll.now()
}

let soon = null
/** A send to many names comes as one event, acks in bursts: one redraw per burst. */
function refreshSoon() {
  clearTimeout(soon)
  soon = setTimeout(refresh, 60)
}

loading(els.threads)
loading(els.thread)
follow({
  pattern: '*',
  live: 'Sends, acks and overdue acks redraw the page at once',
  fallback: `the page still polls every ${POLL_MS / 1000} s`,
  onOpen: refresh,
  onEvent: (e) => {
    if (e.topic === 'message.acked' || e.topic === 'message.overdue') stale.add(e.data?.id)
    if (e.topic.startsWith('message.') || e.topic.startsWith('instance.')) refreshSoon()
  },
})
