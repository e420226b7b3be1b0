// Live events: the latest history for the topic filter, then the WebSocket
// /api/events/subscribe?pattern=..&after_id=.. so nothing is missed between the
// two. A dropped socket reconnects with the last id seen; when the socket cannot
// be opened at all, the panel polls the history every 2 s instead. Each event reads
// as a sentence with instance names (event-summary.js); a click shows its JSON.

import { api, onTokenChange, socketUrl } from '../api.js'
import { summarize } from '../event-summary.js'
import { instanceNames } from '../names.js'
import { clock, fill, fullTime, h, stateBox, failure } from '../ui.js'

const KEEP = 300
const POLL_MS = 2000
const MAX_BACKOFF_MS = 15000
/** Failed opens in a row before falling back to polling. */
const FAILS_BEFORE_POLLING = 3

export function eventsPanel({ onEvent = () => {} } = {}) {
  const section = document.getElementById('events')
  const list = section.querySelector('ol.events')
  const meta = section.querySelector('.meta')
  const status = document.getElementById('stream-status')
  const form = document.getElementById('topic-form')
  const input = document.getElementById('topic-filter')
  const pauseBtn = document.getElementById('events-pause')
  const clearBtn = document.getElementById('events-clear')

  let pattern = new URLSearchParams(location.search).get('topic') || '*'
  input.value = pattern
  let events = [] // newest first
  let seen = new Set()
  let lastId = 0
  let paused = false
  let held = 0 // events that arrived while paused
  let run = 0 // bumps on every restart so stale sockets and timers stop
  let socket = null
  let timer = null
  /** Instance id → instance, for the sentences; kept fresh as events name new instances. */
  let names = new Map()
  const learnNames = async () => {
    names = await instanceNames()
  }

  const setStatus = (cls, text, title = '') => {
    status.className = `pill ${cls}`
    status.textContent = text
    status.title = title
  }

  const itemOf = (e, fresh) => {
    const hasData = e.data !== undefined && e.data !== null
    const line = summarize(e, names)
    const raw = hasData ? h('pre', { class: 'ev-data', hidden: true }) : null
    const li = h('li', { class: fresh ? 'fresh' : null, dataset: { id: e.id, topic: e.topic }, title: `${fullTime(e.created_at)}${hasData ? ' · click for the JSON' : ''}` },
      h('div', { class: 'ev-head' },
        h('span', { class: 'ev-topic', text: e.topic }),
        e.source ? h('span', { class: 'badge', text: e.source }) : null,
        h('span', { class: 'ev-id', text: `#${e.id}` }),
        h('span', { class: 'ev-time', text: clock(e.created_at) })),
      line ? h('div', { class: 'ev-summary', text: line }) : null,
      raw)
    li.addEventListener('click', () => {
      if (!raw || getSelection()?.toString()) return
      const open = li.classList.toggle('open')
      if (open) raw.textContent = JSON.stringify(e.data, null, 2)
      raw.hidden = !open
    })
    return li
  }

  const renderAll = () => {
    meta.textContent = events.length ? `${events.length} shown` : ''
    if (events.length === 0)
      return stateBox(list, 'empty', 'No events yet', pattern === '*' ? 'Published events appear here as they happen.' : ['Nothing matching ', h('code', { text: pattern }), ' yet.'])
    fill(list, events.map((e) => itemOf(e, false)))
  }

  /** Adds events (any order, duplicates ignored); new ones go on top. */
  const add = (batch, fresh) => {
    const news = batch.filter((e) => e && typeof e.id === 'number' && !seen.has(e.id)).sort((a, b) => a.id - b.id)
    if (news.length === 0) return
    for (const e of news) {
      seen.add(e.id)
      lastId = Math.max(lastId, e.id)
      // A new instance is named by its own event, before the shared list would know it.
      if (e.topic === 'instance.registered' && e.data?.id && !names.has(e.data.id)) names = new Map(names).set(e.data.id, e.data)
      if (fresh) onEvent(e)
    }
    if (fresh) learnNames()
    if (paused) {
      held += news.length
      pauseBtn.textContent = `Resume (${held} new)`
    }
    const wasEmpty = events.length === 0
    events = [...news.reverse(), ...events].sort((a, b) => b.id - a.id)
    if (events.length > KEEP) {
      for (const e of events.slice(KEEP)) seen.delete(e.id)
      events = events.slice(0, KEEP)
    }
    if (paused) return
    if (wasEmpty || !fresh) return renderAll()
    for (const e of news) list.prepend(itemOf(e, true))
    while (list.children.length > KEEP) list.lastElementChild.remove()
    meta.textContent = `${events.length} shown`
  }

  const stop = () => {
    run++
    clearTimeout(timer)
    if (socket) {
      socket.onclose = socket.onmessage = socket.onopen = socket.onerror = null
      socket.close()
      socket = null
    }
  }

  const connect = (myRun, failures) => {
    if (myRun !== run) return
    setStatus('', failures ? 'Reconnecting…' : 'Connecting…')
    let opened = false
    const ws = new WebSocket(socketUrl('/api/events/subscribe', { pattern, after_id: lastId }))
    socket = ws
    ws.onopen = () => {
      opened = true
      setStatus('ok live', 'Live', `Subscribed to ${pattern}`)
    }
    ws.onmessage = (msg) => {
      try {
        add([JSON.parse(msg.data)], true)
      } catch {}
    }
    ws.onclose = (e) => {
      if (myRun !== run) return
      socket = null
      const fails = opened ? 0 : failures + 1
      if (fails >= FAILS_BEFORE_POLLING) return poll(myRun)
      const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** fails)
      setStatus('warn', 'Reconnecting…', `Connection closed${e.reason ? `: ${e.reason}` : ''}; retrying in ${Math.round(wait / 1000)} s`)
      timer = setTimeout(() => connect(myRun, fails), wait)
    }
  }

  /** Fallback when the socket cannot be opened: history with after_id every 2 s. */
  const poll = async (myRun) => {
    if (myRun !== run) return
    try {
      add(await api(`/api/events/history?topic=${encodeURIComponent(pattern)}&after_id=${lastId}&last=100`), true)
      setStatus('warn', 'Polling', 'The WebSocket could not be opened; polling the event history every 2 s')
    } catch (err) {
      setStatus('bad', 'Offline', err.message)
    }
    if (myRun === run) timer = setTimeout(() => poll(myRun), POLL_MS)
  }

  const start = async () => {
    stop()
    const myRun = run
    events = []
    seen = new Set()
    lastId = 0
    setStatus('', 'Connecting…')
    list.replaceChildren(h('li', { class: 'state-box loading', text: 'Loading recent events…' }))
    try {
      const [recent] = await Promise.all([api(`/api/events/history?topic=${encodeURIComponent(pattern)}&last=50`), learnNames()])
      if (myRun !== run) return
      add(recent, false)
      renderAll()
    } catch (err) {
      if (myRun !== run) return
      setStatus(err.needsToken ? 'warn' : 'bad', err.missingEndpoint ? 'Unavailable' : err.needsToken ? 'Needs token' : 'Offline', err.message)
      meta.textContent = ''
      const box = h('li')
      fill(list, box)
      failure(box, err, 'GET /api/events/history', start)
      if (err.missingEndpoint || err.needsToken) return
      timer = setTimeout(start, MAX_BACKOFF_MS)
      return
    }
    connect(myRun, 0)
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const next = input.value.trim() || '*'
    input.value = next
    pattern = next
    const url = new URL(location.href)
    if (next === '*') url.searchParams.delete('topic')
    else url.searchParams.set('topic', next)
    history.replaceState(null, '', url)
    start()
  })
  pauseBtn.addEventListener('click', () => {
    paused = !paused
    pauseBtn.setAttribute('aria-pressed', String(paused))
    pauseBtn.textContent = paused ? 'Resume' : 'Pause'
    if (!paused) {
      held = 0
      renderAll()
    }
  })
  clearBtn.addEventListener('click', () => {
    events = []
    renderAll()
  })
  onTokenChange(start)
  start()
}
