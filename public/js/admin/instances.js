// Instances (admin): every registered agent with its agent metrics summed over
// all periods (GET /api/metrics/agents), deregister (DELETE /api/instances/{id}),
// and one agent's metrics per hour (GET /api/metrics/agents/{id}).

import { api } from '../api.js'
import { forgetNames } from '../names.js'
import { cell, changed, confirmButton, failure, fill, h, int, loading, outcome, panel, stateBox, timeAgo } from '../ui.js'

const METRICS = ['rest_calls', 'mcp_calls', 'violations', 'rollbacks']
const LABELS = { rest_calls: 'REST calls', mcp_calls: 'MCP calls', violations: 'Violations', rollbacks: 'Rollbacks' }
const enc = encodeURIComponent

export function instancesSection(root) {
  const list = panel({ id: 'admin-instances', title: 'Instances', flush: true })
  const detail = panel({ id: 'agent-metrics', title: 'Agent metrics', flush: true })
  const result = h('div', { class: 'action-result' })
  root.append(list.el, detail.el)
  let selected = null
  let instances = []
  const drawn = {}

  const row = (inst, sums) => {
    const m = sums.get(inst.id) ?? {}
    const stale = inst.status === 'stale'
    return h('tr', { class: stale ? 'stale' : null, dataset: { id: inst.id } },
      cell('Name', { class: 'wrap-any' },
        h('div', { class: 'strong', text: inst.name }),
        h('button', { type: 'button', class: 'who sub mono', title: `${inst.id} (click to copy)`, onclick: () => navigator.clipboard?.writeText(inst.id).catch(() => {}), text: inst.id.slice(0, 8) })),
      cell('Status', {}, h('span', { class: `badge ${stale ? 'warn' : inst.status === 'active' ? 'ok' : ''}`, text: inst.status })),
      cell('Workspace · stack', { class: 'wrap-any' }, h('div', { text: inst.workspace || '—' }), inst.stack ? h('div', { class: 'sub', text: inst.stack }) : null),
      cell('Calls', { class: 'num' }, int((m.rest_calls ?? 0) + (m.mcp_calls ?? 0)), h('div', { class: 'sub', text: `${int(m.rest_calls ?? 0)} REST · ${int(m.mcp_calls ?? 0)} MCP` })),
      cell('Violations', { class: 'num' }, int(m.violations ?? 0)),
      cell('Rollbacks', { class: 'num' }, int(m.rollbacks ?? 0)),
      cell('Last seen', {}, inst.last_seen ? timeAgo(inst.last_seen) : '—'),
      cell('', { class: 'actions-cell' },
        h('button', { class: 'btn small', type: 'button', 'aria-pressed': String(selected === inst.id), onclick: () => show(inst.id), text: 'Metrics' }),
        confirmButton('Deregister', 'Confirm deregister', async () => {
          await api(`/api/instances/${enc(inst.id)}`, { method: 'DELETE' })
          forgetNames()
          if (selected === inst.id) selected = null
          outcome(result, true, `Deregistered ${inst.name}.`)
          await refresh()
        }, { onError: (err) => outcome(result, false, `Deregister failed: ${err.message}`) })))
  }

  async function refresh() {
    let sums
    try {
      const [all, agg] = await Promise.all([api('/api/instances'), api('/api/metrics/agents')])
      instances = all
      sums = new Map((agg ?? []).map((a) => [a.instance_id, a.metrics]))
    } catch (err) {
      drawn.last = null
      return failure(list.body, err, 'GET /api/instances', refresh)
    }
    if (!changed(drawn, [instances, [...sums], selected])) return
    const stale = instances.filter((i) => i.status === 'stale').length
    list.meta.textContent = `${instances.length} registered${stale ? ` · ${stale} stale` : ''}`
    if (instances.length === 0) {
      stateBox(list.body, 'empty', 'No agents registered', ['Agents appear once they call ', h('code', { text: 'POST /api/instances/register' }), '.'])
      list.body.prepend(result)
    } else
      fill(list.body, result, h('table', { class: 'data cards fixed', id: 'instances-table' },
        h('colgroup', {}, ['c-name', 'c-status', 'c-wide', 'c-num', 'c-num', 'c-num', 'c-when', 'c-actions2'].map((c) => h('col', { class: c }))),
        h('thead', {}, h('tr', {}, ['Name', 'Status', 'Workspace · stack', 'Calls', 'Violations', 'Rollbacks', 'Last seen', ''].map((t, i) => h('th', { class: i >= 3 && i <= 5 ? 'num' : null, text: t })))),
        h('tbody', {}, instances.map((i) => row(i, sums)))))
    await renderDetail()
  }

  async function renderDetail() {
    const inst = instances.find((i) => i.id === selected)
    detail.el.hidden = !inst
    if (!inst) return
    detail.meta.textContent = inst.name
    try {
      const rows = await api(`/api/metrics/agents/${enc(inst.id)}`)
      const periods = new Map()
      for (const r of rows) {
        const p = periods.get(r.period) ?? {}
        p[r.metric_name] = r.metric_value
        periods.set(r.period, p)
      }
      if (periods.size === 0) return stateBox(detail.body, 'empty', `No metrics for ${inst.name} yet`, 'Calls made with its X-Instance-Token are counted per hour.')
      fill(detail.body, h('table', { class: 'data cards fixed', id: 'agent-metrics-table' },
        h('thead', {}, h('tr', {}, ['Hour (UTC)', ...METRICS].map((t, i) => h('th', { class: i ? 'num' : null, text: LABELS[t] ?? t })))),
        h('tbody', {}, [...periods].sort((a, b) => b[0].localeCompare(a[0])).map(([period, m]) =>
          h('tr', {}, cell('Hour (UTC)', { class: 'mono' }, period.replace('T', ' ') + ':00'),
            METRICS.map((name) => cell(LABELS[name], { class: 'num' }, int(m[name] ?? 0))))))))
    } catch (err) {
      failure(detail.body, err, 'GET /api/metrics/agents/{id}', renderDetail)
    }
  }

  function show(id) {
    selected = selected === id ? null : id
    history.replaceState(null, '', selected ? `#instances/${enc(selected)}` : '#instances')
    drawn.last = null
    refresh()
  }

  loading(list.body)
  detail.el.hidden = true
  return {
    refresh,
    open(arg) {
      if (arg) selected = decodeURIComponent(arg)
      drawn.last = null
      return refresh()
    },
  }
}
