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

/** "3 min ago" for a past instant, "in 8 min" for a future one (an expiry, a deadline). */
export function ago(iso) {
  const ms = Date.now() - Date.parse(iso)
  if (!Number.isFinite(ms)) return '—'
  const future = ms < 0
  const s = Math.round(Math.abs(ms) / 1000)
  if (!future && s < 5) return 'just now'
  if (future && s < 1) return 'now'
  const say = (n, unit) => (future ? `in ${n} ${unit}` : `${n} ${unit} ago`)
  if (s < 60) return say(s, 's')
  const m = Math.round(s / 60)
  if (m < 60) return say(m, 'min')
  const hours = Math.round(m / 60)
  if (hours < 48) return say(hours, 'h')
  return say(Math.round(hours / 24), 'd')
}

/** A <time> showing "3 min ago" or "in 8 min" with the exact instant on hover; kept current by the ticker below. */
export function timeAgo(iso) {
  return h('time', { datetime: iso, title: fullTime(iso), 'data-ago': true, text: ago(iso) })
}

// Relative times age in place, so panels only redraw when their data changes.
setInterval(() => {
  for (const t of document.querySelectorAll('time[data-ago]')) t.textContent = ago(t.dateTime)
}, 5_000)

/** Returns true when `data` differs from what was drawn last with this memo (and remembers it). */
export function changed(memo, data) {
  const text = JSON.stringify(data)
  if (memo.last === text) return false
  memo.last = text
  return true
}

const pad = (n) => String(n).padStart(2, '0')

/** "2026-11-25 14:32:05" in local time: a 24-hour clock whatever the browser's locale. */
export function fullTime(iso) {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return String(iso ?? '')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(iso)}`
}

/** "14:32:05" in local time, 24-hour. */
export function clock(iso) {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? '' : `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

/** 90000 → "1.5 min". */
export function duration(ms) {
  const units = [['d', 86_400_000], ['h', 3_600_000], ['min', 60_000], ['s', 1000]]
  const [unit, size] = units.find(([, size]) => ms >= size) ?? ['ms', 1]
  return `${Number((ms / size).toFixed(1))} ${unit}`
}

/** "30s", "10m", "2h", "1d" (or with a space, or "min") in milliseconds; null when it is none of these. */
export function parseDuration(text) {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)$/.exec(text.trim())
  if (!m) return null
  const ms = Number(m[1]) * { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 }[m[2]]
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : null
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

// ---- actions -------------------------------------------------------------------------

/**
 * A button for a destructive action: the first click arms it ("Confirm …"), a
 * second within 4 s runs `run`. While it runs the button is disabled; an error
 * it throws goes to `onError` (default: shown as the button's title and text).
 * `needs` is the role it takes (role.js): a viewer never sees one, an agent not an admin one.
 */
export function confirmButton(label, confirmLabel, run, { onError, small = true, needs = 'write' } = {}) {
  let armed = null
  const b = h('button', { class: `btn ${small ? 'small ' : ''}danger`, type: 'button', 'data-needs': needs, text: label })
  b.addEventListener('click', async () => {
    if (!armed) {
      b.textContent = confirmLabel
      armed = setTimeout(() => ((armed = null), (b.textContent = label)), 4000)
      return
    }
    clearTimeout(armed)
    armed = null
    b.disabled = true
    try {
      await run()
    } catch (err) {
      if (onError) onError(err)
      else b.title = err.message
    } finally {
      b.disabled = false
      b.textContent = label
    }
  })
  return b
}

/** Shows a short outcome under a form: green for done, red for a failure. */
export function outcome(el, ok, text) {
  return fill(el, h('div', { class: ok ? 'inline-ok' : 'inline-error', role: ok ? 'status' : 'alert', text }))
}

/** Runs an action from a button: disabled and relabelled while it runs, the result or error shown in `out`. */
export async function act(button, busyLabel, out, run) {
  const label = button.textContent
  button.disabled = true
  button.textContent = busyLabel
  try {
    const text = await run()
    if (out && text) outcome(out, true, text)
    return true
  } catch (err) {
    if (out) outcome(out, false, err.status ? `${err.status}: ${err.message}` : err.message)
    return false
  } finally {
    button.disabled = false
    button.textContent = label
  }
}

/** JSON.parse with the error message a person can act on. */
export function parseJson(text, what = 'value') {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new Error(`The ${what} is not valid JSON: ${err.message}`)
  }
}

/** A panel like the pages' own: header (title, meta, tools) and a body. */
export function panel({ id, title, tools = [], flush = false }) {
  const meta = h('span', { class: 'meta' })
  const body = h('div', { class: `body${flush ? ' flush scroll' : ''}` })
  const el = h('section', { class: 'panel', id, 'aria-labelledby': `${id}-title` },
    h('header', {}, h('h2', { id: `${id}-title`, text: title }), meta, tools.length ? h('div', { class: 'tools' }, tools) : null),
    body)
  return { el, body, meta }
}

/** A labelled form field. */
export const field = (label, input, hint) => h('label', { class: 'field' }, h('span', {}, label, hint ? h('span', { class: 'hint', text: ` ${hint}` }) : null), input)

/** Comma-separated text as a list of trimmed non-empty items. */
export const commaList = (text) => String(text).split(',').map((s) => s.trim()).filter(Boolean)
