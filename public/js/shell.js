// The top bar every page shares, drawn into the page's empty <header class="topbar">:
// the pages' nav (this one marked), the search box (command palette), service health
// (GET /health, open without a token), the role badge ("read-only" for a viewer token,
// "agent" for an agent token) and the access-token control. A page that follows the
// event stream marks its header data-stream and gets the #stream-status pill too.

import { api, forgetToken, hasToken, onTokenChange } from './api.js'
import { paletteButton } from './palette.js'
import { onRole, startRole } from './role.js'
import { every, h, fill } from './ui.js'

/** The dashboard's pages, in the nav's order. */
const PAGES = [
  ['/', 'Overview'],
  ['/rules', 'Rules'],
  ['/coordination', 'Coordination'],
  ['/tasks', 'Tasks'],
  ['/messages', 'Messages'],
  ['/approvals', 'Approvals'],
  ['/admin', 'Admin'],
]

function drawTopbar() {
  const bar = document.querySelector('header.topbar')
  const here = location.pathname.replace(/(.)\/+$/, '$1')
  fill(
    bar,
    h('a', { class: 'brand', href: '/' }, h('img', { src: '/favicon.svg', alt: '' }), 'Muster'),
    h('nav', { class: 'nav' }, PAGES.map(([href, text]) =>
      h('a', { href, 'aria-current': href === here ? 'page' : null }, text,
        href === '/approvals' ? h('span', { id: 'approval-count', class: 'badge warn count', title: 'agent requests waiting for a person', hidden: true }) : null))),
    h('span', { class: 'spacer' }),
    'stream' in bar.dataset ? h('span', { id: 'stream-status', class: 'pill', text: 'Connecting…' }) : null,
    h('span', { id: 'health', class: 'pill', text: 'Checking health…' }),
    h('span', { id: 'role-badge', class: 'badge', hidden: true }),
    h('span', { id: 'auth-slot' }),
  )
}

let countPoll = null

/**
 * The nav's count of approvals waiting for a person: `known` when the caller just read
 * it, else read now (pages call this on approval.* events; it also polls).
 */
export async function refreshApprovalCount(known) {
  const badge = document.getElementById('approval-count')
  if (!badge) return
  let n = known
  if (n === undefined) {
    try {
      n = (await api('/api/approvals?status=pending&limit=1000')).length
    } catch {
      return
    }
  }
  badge.hidden = !n
  badge.textContent = !n ? '' : n >= 1000 ? '999+' : String(n)
}

/** Draws the top bar (synchronously: pages look up #stream-status right after) and starts its pills. */
export function startShell() {
  drawTopbar()
  startRole()
  const badge = document.getElementById('role-badge')
  onRole((role) => {
    badge.hidden = role !== 'viewer' && role !== 'agent'
    badge.className = `badge ${role === 'viewer' ? 'warn' : 'accent'}`
    badge.textContent = role === 'viewer' ? 'read-only' : role === 'agent' ? 'agent token' : ''
    badge.title = role === 'viewer'
      ? 'Signed in with a viewer token: this console shows everything and changes nothing'
      : role === 'agent' ? 'Signed in with an agent token: admin-only actions (tokens, backup, webhooks, rule verdicts, templates, compliance runs, force-release) are hidden' : ''
  })
  countPoll ??= every(15000, () => refreshApprovalCount())
  const pill = document.getElementById('health')
  pill.before(paletteButton())
  every(5000, async () => {
    try {
      const res = await fetch('/health', { cache: 'no-store' })
      const body = await res.json()
      if (!res.ok || body.status !== 'ok') throw new Error(body.error || `HTTP ${res.status}`)
      pill.className = 'pill ok'
      pill.textContent = `Healthy · up ${body.uptime}`
      pill.title = 'GET /health answered ok'
    } catch (err) {
      pill.className = 'pill bad'
      pill.textContent = 'Server unreachable'
      pill.title = String(err?.message ?? err)
    }
  })

  const slot = document.getElementById('auth-slot')
  const render = () =>
    fill(slot, hasToken()
      ? h('button', { class: 'btn small', type: 'button', title: 'Remove the access token from every tab of this dashboard', onclick: () => forgetToken(), text: 'Forget token' })
      : null)
  onTokenChange(render)
  render()
}
