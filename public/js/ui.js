// Small DOM and formatting helpers shared by every panel. All text goes in through
// textContent, never as HTML: keys, values and event data come from agents.

import { requestToken } from './api.js'

/** h('td', {class: 'num', dataset: {label: 'Cost'}, onclick}, child, 'text', ...) */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') el.className = v
    else if (k === 'text') el.textContent = v
    else if (k === 'dataset') Object.assign(el.dataset, v)
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue
    el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren()
  append(el, children)
  return el
}

/**
 * A table cell that keeps its column name for the narrow-window card layout,
 * where the name and one content block sit side by side.
 */
export const cell = (label, props, ...children) => h('td', { ...props, dataset: { label } }, h('div', { class: 'cell' }, ...children))

// ---- formatting ----------------------------------------------------------------

export function ago(iso) {
  const ms = Date.now() - Date.parse(iso)
  if (!Number.isFinite(ms)) return '—'
  const s = Math.round(ms / 1000)
  if (s < 5) return 'just now'
  if (s < 60) return `${s} s ago`
  const m = Math.round(s / 60)
  if (m < 60) return `${m} min ago`
  const hours = Math.round(m / 60)
  if (hours < 48) return `${hours} h ago`
  return `${Math.round(hours / 24)} d ago`
}

/** A <time> showing "3 min ago" with the exact instant on hover; kept current by the ticker below. */
export function timeAgo(iso) {
  return h('time', { datetime: iso, title: fullTime(iso), 'data-ago': true, text: ago(iso) })
}

// Relative times age in place, so panels only redraw when their data changes.
setInterval(() => {
  for (const t of document.querySelectorAll('time[data-ago]')) t.textContent = ago(t.dateTime)
}, 10_000)

/** Returns true when `data` differs from what was drawn last with this memo (and remembers it). */
export function changed(memo, data) {
  const text = JSON.stringify(data)
  if (memo.last === text) return false
  memo.last = text
  return true
}

export function fullTime(iso) {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? String(iso ?? '') : d.toLocaleString()
}

export function clock(iso) {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })
}

export const int = (n) => (Number.isFinite(Number(n)) ? Number(n).toLocaleString('en-US') : '—')

export function usd(n) {
  const v = Number(n) || 0
  if (v === 0) return '$0.00'
  if (Math.abs(v) >= 1) return `$${v.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`
  return `$${v.toPrecision(3).replace(/0+$/, '').replace(/\.$/, '')}`
}

export function bytes(n) {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}

// ---- panel states ----------------------------------------------------------------

/**
 * Fills `el` with a deliberate state: loading, empty, an API error, a missing
 * endpoint, or a 401 with a button that asks for the token.
 */
export function stateBox(el, kind, title, detail, action) {
  const box = h('div', { class: `state-box ${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    h('div', { class: 'title', text: title }),
    detail ? h('div', { class: 'detail' }, detail) : null,
    action ? h('button', { class: 'btn small', type: 'button', onclick: action.run, text: action.label }) : null,
  )
  fill(el, box)
  return box
}

export const loading = (el, what = 'Loading…') => stateBox(el, 'loading', what)

/** Shows why a panel could not load. `endpoint` names the call for the missing-endpoint case. */
export function failure(el, err, endpoint, retry) {
  if (err?.needsToken)
    return stateBox(el, 'auth', 'Access token needed', 'This server requires its access token for this panel.', { label: 'Enter token', run: () => requestToken() })
  if (err?.missingEndpoint)
    return stateBox(el, 'missing', 'Not available on this server', [h('code', { text: endpoint }), ' is not provided by this Muster server version.'])
  if (err?.status === 0 || err?.status === 502)
    return stateBox(el, 'error', 'Server unreachable', err.message, retry && { label: 'Retry', run: retry })
  const status = err?.status ? `${err.status}: ` : ''
  return stateBox(el, 'error', 'Could not load', `${status}${err?.message ?? String(err)}`, retry && { label: 'Retry', run: retry })
}

// ---- polling -----------------------------------------------------------------------

/**
 * Runs task now and every `ms` while the tab is visible; never two runs at
 * once. Returns {now()} to refresh immediately (e.g. when an event says so).
 */
export function every(ms, task) {
  let timer = null
  let running = false
  let again = false
  const run = async () => {
    clearTimeout(timer)
    if (running) {
      again = true
      return
    }
    running = true
    try {
      await task()
    } catch (err) {
      console.warn(err)
    } finally {
      running = false
    }
    if (again) {
      again = false
      return run()
    }
    timer = setTimeout(tick, ms)
  }
  const tick = () => (document.hidden ? (timer = setTimeout(tick, ms)) : run())
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) run()
  })
  run()
  return { now: run }
}

/** Pretty JSON when the text parses, else the text itself. */
export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

/** Saves a Blob as a download. */
export function download(blob, name) {
  const url = URL.createObjectURL(blob)
  const a = h('a', { href: url, download: name })
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
