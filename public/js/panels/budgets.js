// Budgets (GET /api/budgets): each limit with what its current window has spent, as a
// bar against the limit; warned at 80%, over at 100% (a deny budget then stops its agents).

import { api } from '../api.js'
import { cell, changed, every, failure, fill, h, loading, stateBox, timeAgo, usd } from '../ui.js'

const WARN_AT = 0.8

function state(b) {
  const share = b.spent_usd / b.limit_usd
  if (share >= 1) return { kind: 'bad', text: b.action === 'deny' ? 'exceeded · denying' : 'exceeded' }
  if (share >= WARN_AT) return { kind: 'warn', text: 'warning' }
  return { kind: 'ok', text: 'ok' }
}

function row(b) {
  const s = state(b)
  return h('tr', { dataset: { name: b.name } },
    cell('Budget', {}, h('div', { class: 'mono ellipsis', title: b.name, text: b.name }), h('div', { class: 'sub', text: b.scope === 'all' ? 'all usage' : `${b.scope} ${b.target}` })),
    cell('Window', {}, h('div', { text: b.window === 'total' ? 'in total' : `per ${b.window}` }), b.window === 'total' ? null : h('div', { class: 'sub' }, 'since ', timeAgo(b.window_start))),
    cell('Action', {}, h('span', { class: `badge ${b.action === 'deny' ? 'accent' : ''}`, text: b.action })),
    cell('Spent', { class: 'num nowrap' }, `${usd(b.spent_usd)} of ${usd(b.limit_usd)} `, h('span', { class: 'share', 'data-share': Math.min(1, b.spent_usd / b.limit_usd) })),
    cell('State', {}, h('span', { class: `badge ${s.kind}`, text: s.text })),
  )
}

export function budgetsPanel() {
  const section = document.getElementById('budgets')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  const memo = {}

  const load = async () => {
    let budgets
    try {
      budgets = await api('/api/budgets')
    } catch (err) {
      meta.textContent = ''
      return failure(body, err, 'GET /api/budgets', () => poll.now())
    }
    if (!changed(memo, budgets)) return
    const over = budgets.filter((b) => b.spent_usd >= b.limit_usd).length
    meta.textContent = `${budgets.length} budget${budgets.length === 1 ? '' : 's'}${over ? ` · ${over} exceeded` : ''}`
    if (!budgets.length)
      return stateBox(body, 'empty', 'No budgets', ['A person with the admin token sets one with ', h('code', { text: 'muster budgets set <name> --limit USD' }), '.'])
    fill(body, h('table', { class: 'data cards' },
      h('thead', {}, h('tr', {}, ['Budget', 'Window', 'Action', 'Spent', 'State'].map((t) => h('th', { class: t === 'Spent' ? 'num' : null, text: t })))),
      h('tbody', {}, budgets.map(row))))
    // Widths through the CSSOM: the page's CSP forbids inline style attributes.
    for (const el of body.querySelectorAll('[data-share]')) el.style.width = `${Math.round(Number(el.dataset.share) * 64)}px`
  }

  loading(body)
  const poll = every(15000, load)
  return poll
}
