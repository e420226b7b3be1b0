// Entry point of the Approvals page (GET /approvals): agents' permission requests that
// wait for a person, newest on top. Everything goes through the API:
//   pending        GET  /api/approvals?status=pending
//   history        GET  /api/approvals?limit=50 (the decided, expired and withdrawn ones)
//   decide         POST /api/approvals/{id}/decision {behavior, message, remember}
//   several        POST /api/approvals/decision {ids, behavior, message}
//   rules          GET / POST /api/approval-rules, DELETE /api/approval-rules/{id}
// Live: every approval.* event from /api/events/subscribe re-reads the lists at once;
// a request that arrives while the page is open raises a browser notification (once
// the person allowed them). Keys: a allow, d deny, r always allow, j/n next, k previous,
// x select.

import { api } from './api.js'
import { refreshApprovalCount, startShell } from './shell.js'
import { follow } from './stream.js'
import { allowed, onRole } from './role.js'
import { every, failure, fill, h, outcome, stateBox, timeAgo } from './ui.js'

startShell()

const els = {
  list: document.querySelector('#pending .approval-list'),
  meta: document.querySelector('#pending .meta'),
  allowAll: document.getElementById('allow-all'),
  denyAll: document.getElementById('deny-all'),
  notify: document.getElementById('notify'),
  rules: document.querySelector('#rules .rule-list'),
  rulesMeta: document.querySelector('#rules .meta'),
  ruleForm: document.getElementById('rule-form'),
  ruleOut: document.querySelector('#rules .rule-out'),
  history: document.querySelector('#history tbody'),
  historyMeta: document.querySelector('#history .meta'),
}

let pending = []
let focused = null
const selected = new Set()
/** Ids seen pending: a newly arrived one flashes and notifies once. */
const seen = new Set()
let firstLoad = true
let drawn = ''

// ---- pending -----------------------------------------------------------------------

async function loadPending() {
  try {
    pending = await api('/api/approvals?status=pending&limit=1000')
  } catch (err) {
    drawn = ''
    failure(els.list, err, 'GET /api/approvals', () => lists.now())
    throw err
  }
  const fresh = pending.filter((a) => !seen.has(a.id))
  for (const a of pending) seen.add(a.id)
  if (!firstLoad) for (const a of fresh) notify(a)
  firstLoad = false
  for (const id of [...selected]) if (!pending.some((a) => a.id === id)) selected.delete(id)
  if (!pending.some((a) => a.id === focused)) focused = pending[0]?.id ?? null
  draw(new Set(fresh.map((a) => a.id)))
  refreshApprovalCount(pending.length)
}

function draw(fresh = new Set()) {
  const text = JSON.stringify([pending.map((a) => a.id), focused, [...selected]])
  if (text === drawn && !fresh.size) return
  drawn = text
  els.meta.textContent = pending.length ? `${pending.length} waiting` : ''
  const several = selected.size > 0 && allowed('admin')
  els.allowAll.hidden = els.denyAll.hidden = !several
  if (several) (els.allowAll.textContent = `Allow ${selected.size}`), (els.denyAll.textContent = `Deny ${selected.size}`)
  if (!pending.length) return stateBox(els.list, 'empty', 'Nothing waits for you', 'When an agent asks for a permission, it appears here at once.')
  fill(els.list, pending.map((a) => item(a, fresh.has(a.id))))
}

function item(a, fresh) {
  const message = h('input', { type: 'text', placeholder: 'message to the agent (why, what instead)', 'aria-label': 'Message', class: 'message' })
  const out = h('span', { class: 'note' })
  const decide = (behavior, remember = false) => decideOne(a, behavior, message.value.trim(), remember, out)
  const isInput = a.kind === 'input'
  const li = h('li', {
    class: `approval${fresh ? ' fresh' : ''}`, role: 'option', 'aria-selected': String(a.id === focused), dataset: { id: a.id },
    onclick: (e) => { if (!(e.target instanceof HTMLInputElement || e.target instanceof HTMLButtonElement)) focus(a.id) },
  },
    h('input', { type: 'checkbox', 'aria-label': 'Select', checked: selected.has(a.id), disabled: isInput, 'data-needs': 'admin', onchange: (e) => toggle(a.id, e.target.checked) }),
    h('div', {},
      h('span', { class: 'who', text: a.name }), ' ',
      isInput ? h('span', { class: 'badge warn', text: 'needs input' }) : h('span', { class: 'tool', text: a.tool }),
      ' ', h('span', { class: 'waiting' }, 'asked ', timeAgo(a.created_at), a.expires_at ? [' · answers itself ', timeAgo(a.expires_at)] : null)),
    h('span', { class: 'badge', text: a.project }),
    h('div', { class: 'summary', text: a.summary }),
    isInput
      ? h('div', { class: 'actions' }, h('span', { class: 'note' }, 'The agent waits for its user: answer it with a message (', h('a', { href: '/messages', text: 'Messages' }), ').'))
      : h('div', { class: 'actions', 'data-needs': 'admin' },
          h('button', { class: 'btn small primary', type: 'button', onclick: () => decide('allow'), text: 'Allow' }),
          h('button', { class: 'btn small danger', type: 'button', onclick: () => decide('deny'), text: 'Deny' }),
          h('button', { class: 'btn small', type: 'button', title: 'Allow, and add a rule for this tool, agent and exact command', onclick: () => decide('allow', true), text: 'Always allow' }),
          message, out),
  )
  return li
}

async function decideOne(a, behavior, message, remember, out) {
  try {
    await api(`/api/approvals/${encodeURIComponent(a.id)}/decision`, { method: 'POST', body: { behavior, message: message || undefined, remember } })
    next(a.id)
    lists.now()
    if (remember) rules.now()
  } catch (err) {
    if (out) out.textContent = `${err.status ? `${err.status}: ` : ''}${err.message}`
    lists.now()
  }
}

async function decideSelected(behavior) {
  const ids = [...selected]
  if (!ids.length) return
  try {
    await api('/api/approvals/decision', { method: 'POST', body: { ids, behavior } })
    selected.clear()
  } finally {
    lists.now()
  }
}
els.allowAll.addEventListener('click', () => decideSelected('allow'))
els.denyAll.addEventListener('click', () => decideSelected('deny'))

function toggle(id, on) {
  if (on) selected.add(id)
  else selected.delete(id)
  drawn = ''
  draw()
}

function focus(id) {
  focused = id
  for (const li of els.list.querySelectorAll('.approval')) li.setAttribute('aria-selected', String(li.dataset.id === id))
  els.list.querySelector(`.approval[aria-selected='true']`)?.scrollIntoView({ block: 'nearest' })
}

/** Moves the focus off `id` (just decided) to the one after it. */
function next(id) {
  const i = pending.findIndex((a) => a.id === id)
  const after = pending[i + 1] ?? pending[i - 1]
  focus(after?.id ?? null)
}

function step(by) {
  if (!pending.length) return
  const i = Math.max(0, pending.findIndex((a) => a.id === focused))
  focus(pending[(i + by + pending.length) % pending.length].id)
}

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || e.target instanceof HTMLTextAreaElement) return
  const a = pending.find((x) => x.id === focused)
  const li = els.list.querySelector(`.approval[aria-selected='true']`)
  const words = () => li?.querySelector('input.message')?.value.trim() ?? ''
  const admin = allowed('admin')
  switch (e.key) {
    case 'j':
    case 'n':
    case 'ArrowDown':
      step(1)
      break
    case 'k':
    case 'ArrowUp':
      step(-1)
      break
    case 'a':
      if (a && admin && a.kind === 'permission') decideOne(a, 'allow', words(), false, li?.querySelector('.note'))
      break
    case 'r':
      if (a && admin && a.kind === 'permission') decideOne(a, 'allow', words(), true, li?.querySelector('.note'))
      break
    case 'd':
      if (a && admin && a.kind === 'permission') decideOne(a, 'deny', words(), false, li?.querySelector('.note'))
      break
    case 'x':
      if (a && a.kind === 'permission') toggle(a.id, !selected.has(a.id))
      break
    default:
      return
  }
  e.preventDefault()
})

// ---- browser notifications -----------------------------------------------------------

const canNotify = typeof Notification === 'function'
function drawNotify() {
  els.notify.hidden = !canNotify || Notification.permission !== 'default'
}
els.notify.addEventListener('click', async () => {
  await Notification.requestPermission()
  drawNotify()
})
drawNotify()

function notify(a) {
  if (!canNotify || Notification.permission !== 'granted') return
  const title = a.kind === 'input' ? `${a.name} waits for input` : `${a.name} asks to use ${a.tool}`
  const n = new Notification(title, { body: a.summary.slice(0, 200), tag: `muster-approval-${a.id}` })
  n.onclick = () => (window.focus(), focus(a.id), n.close())
}

// ---- history and rules -------------------------------------------------------------

async function loadHistory() {
  let all
  try {
    all = await api('/api/approvals?limit=50')
  } catch (err) {
    failure(els.history, err, 'GET /api/approvals')
    throw err
  }
  const done = all.filter((a) => a.status !== 'pending')
  els.historyMeta.textContent = done.length ? `latest ${done.length}` : ''
  if (!done.length) return fill(els.history, h('tr', {}, h('td', { class: 'note', text: 'No decisions yet.' })))
  const BADGE = { allowed: 'ok', denied: 'bad', expired: 'warn', withdrawn: '' }
  fill(els.history, done.map((a) =>
    h('tr', { dataset: { id: a.id } },
      h('td', {}, timeAgo(a.decided_at ?? a.created_at)),
      h('td', {}, h('span', { class: `badge ${BADGE[a.status] ?? ''}`, text: a.status })),
      h('td', { text: a.name }),
      h('td', { text: a.kind === 'input' ? 'needs input' : a.tool }),
      h('td', { class: 'summary', text: a.summary }),
      h('td', { text: a.decided_by ? `by ${a.decided_by}${a.message ? `: ${a.message}` : ''}` : '' }))))
}

const lists = every(30_000, () => Promise.all([loadPending(), loadHistory()]))

const rules = every(60_000, async () => {
  let list
  try {
    list = await api('/api/approval-rules')
  } catch (err) {
    failure(els.rules, err, 'GET /api/approval-rules')
    throw err
  }
  els.rulesMeta.textContent = list.length ? `${list.length}` : ''
  if (!list.length) return fill(els.rules, h('li', { class: 'note', text: 'No rules: every request waits for a person.' }))
  fill(els.rules, list.map((r) =>
    h('li', {},
      h('span', { class: `badge ${r.decision === 'deny' ? 'bad' : 'ok'}`, text: r.decision }),
      h('span', { class: 'grow' }, h('code', { text: r.tool }), ' · ', h('code', { text: r.match }), ' · agents ', h('code', { text: r.agents }), r.message ? ` — ${r.message}` : ''),
      h('button', {
        class: 'btn small', type: 'button', 'data-needs': 'admin', text: 'Delete',
        onclick: async () => {
          await api(`/api/approval-rules/${encodeURIComponent(r.id)}`, { method: 'DELETE' }).catch((err) => outcome(els.ruleOut, false, err.message))
          rules.now()
        },
      }))))
})

els.ruleForm.addEventListener('submit', async (e) => {
  e.preventDefault()
  const value = (id) => document.getElementById(id).value.trim() || undefined
  try {
    await api('/api/approval-rules', {
      method: 'POST',
      body: { decision: value('rule-decision'), tool: value('rule-tool'), match: value('rule-match'), agents: value('rule-agents'), message: value('rule-message') },
    })
    els.ruleForm.reset()
    outcome(els.ruleOut, true, 'Rule added: it decides matching requests from now on.')
    rules.now()
  } catch (err) {
    outcome(els.ruleOut, false, `${err.status ? `${err.status}: ` : ''}${err.message}`)
  }
})

onRole(() => ((drawn = ''), draw()))
follow({
  pattern: 'approval.*',
  onEvent: () => lists.now(),
  onOpen: () => lists.now(),
  live: 'Requests appear here as agents ask',
})
