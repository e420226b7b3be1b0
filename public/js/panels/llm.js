// LLM usage: totals and per-group figures from GET /api/llm/usage/summary, and
// cost over time (stacked by model or project) built from GET /api/llm/usage; by agent
// or task, both come from GET /api/llm/usage/buckets (totals per hour or day and key),
// agents named through their instances and hook sessions.

import { api } from '../api.js'
import { PALETTE, stackedBars } from '../chart.js'
import { cell, every, failure, fill, h, int, loading, stateBox, usd } from '../ui.js'

const RANGES = { '24h': { ms: 24 * 3600e3, step: 'hour' }, '7d': { ms: 7 * 86400e3, step: 'day' }, '30d': { ms: 30 * 86400e3, step: 'day' } }
const RECORDS = 1000
const MAX_SERIES = 7
const NONE = '(none)'

/** Axis labels share one number of decimals, enough for the tick step ($0.05, $0.10 …). */
const usdAxis = (v, step) => `$${v.toFixed(Math.max(2, -Math.floor(Math.log10(step))))}`

function bucketStart(ms, step) {
  const d = new Date(ms)
  d.setMinutes(0, 0, 0)
  if (step === 'day') d.setHours(0)
  return d.getTime()
}

/** The first bucket of the range: its start is also the `from` of both queries. */
function rangeStart(range) {
  const { ms, step } = RANGES[range]
  return bucketStart(Date.now() - ms + (step === 'hour' ? 3600e3 : 86400e3), step)
}

// Day buckets step by calendar date (jump 26 h, then floor), so DST cannot skip or repeat a day.
const nextBucket = (t, step) => (step === 'hour' ? t + 3600e3 : bucketStart(t + 26 * 3600e3, 'day'))

/** entries: [{ms, group, cost}] summed into the range's buckets. */
function bucketsOf(entries, range) {
  const { step } = RANGES[range]
  const end = bucketStart(Date.now(), step)
  const byStart = new Map()
  for (let t = rangeStart(range); t <= end; t = nextBucket(t, step)) {
    const d = new Date(t)
    byStart.set(t, {
      label: step === 'hour' ? `${String(d.getHours()).padStart(2, '0')}:00` : d.toLocaleDateString([], { month: 'short', day: 'numeric' }),
      title: step === 'hour' ? d.toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }) : d.toLocaleDateString(),
      values: {},
    })
  }
  for (const e of entries) {
    const b = byStart.get(bucketStart(e.ms, step))
    if (!b) continue
    const g = e.group || NONE
    b.values[g] = (b.values[g] || 0) + (Number(e.cost) || 0)
  }
  return [...byStart.values()]
}

const TOTALS = ['total_tokens_in', 'total_tokens_out', 'total_cost_usd', 'request_count']
const LABEL = { model: 'Model', project: 'Project', agent: 'Agent', task: 'Task' }

/**
 * By agent or task: the summary ({groups, total}) and chart entries of the bucket rows,
 * each row's key turned into its group (an agent's name for its instance ids).
 */
function fromBuckets(rows, groupOf) {
  const groups = {}
  const total = Object.fromEntries(TOTALS.map((k) => [k, 0]))
  const entries = []
  for (const r of rows) {
    const group = groupOf(r.key)
    const g = (groups[group] ??= Object.fromEntries(TOTALS.map((k) => [k, 0])))
    for (const k of TOTALS) (g[k] += r[k] || 0), (total[k] += r[k] || 0)
    const ms = Date.parse(r.bucket.length === 13 ? `${r.bucket}:00:00Z` : `${r.bucket}T00:00:00Z`)
    entries.push({ ms, group, cost: r.total_cost_usd })
  }
  return { summary: { groups, total }, entries }
}

/** Instance id → agent name, from the registered instances and every hook session (which outlive their instances). */
async function agentNames() {
  const [instances, sessions] = await Promise.all([api('/api/instances').catch(() => []), api('/api/sessions?limit=10000').catch(() => [])])
  const names = new Map()
  for (const s of Array.isArray(sessions) ? sessions : []) names.set(s.instance_id, s.name)
  for (const i of Array.isArray(instances) ? instances : []) names.set(i.id, i.name)
  return names
}

export function llmPanel() {
  const section = document.getElementById('llm')
  const body = section.querySelector('.body')
  const meta = section.querySelector('.meta')
  let groupBy = 'model'
  let range = '7d'
  let last = null

  const render = () => {
    if (!last) return
    const { summary, entries, records } = last
    const total = summary.total ?? {}
    const groups = Object.entries(summary.groups ?? {}).sort((a, b) => (b[1].total_cost_usd || 0) - (a[1].total_cost_usd || 0))
    meta.textContent = `${int(total.request_count)} requests`
    if (!total.request_count)
      return stateBox(body, 'empty', 'No LLM usage in this period', ['Agents wired by ', h('code', { text: 'muster init' }), ' send their telemetry (or call ', h('code', { text: 'POST /api/llm/usage' }), '); cost and tokens show up here.'])

    const colors = new Map()
    groups.slice(0, MAX_SERIES).forEach(([name], i) => colors.set(name || NONE, PALETTE[i]))
    const colorOf = (name) => colors.get(name) ?? PALETTE[MAX_SERIES]
    const buckets = bucketsOf(entries, range)
    // Everything beyond the top groups is drawn as one "other" series.
    for (const b of buckets)
      for (const name of Object.keys(b.values))
        if (!colors.has(name)) {
          b.values.other = (b.values.other || 0) + b.values[name]
          delete b.values[name]
        }
    const series = [...colors].map(([name, color]) => ({ name, color }))
    if (buckets.some((b) => b.values.other)) series.push({ name: 'other', color: PALETTE[MAX_SERIES] })

    const chart = h('div', { class: 'chart' })
    const biggest = Math.max(0, ...groups.map(([, g]) => g.total_cost_usd || 0))
    fill(body,
      h('div', { class: 'totals' },
        [['Cost', usd(total.total_cost_usd)], ['Requests', int(total.request_count)], ['Tokens in', int(total.total_tokens_in)], ['Tokens out', int(total.total_tokens_out)]]
          .map(([label, value]) => h('div', {}, h('div', { class: 'label', text: label }), h('div', { class: 'value', title: value, text: value })))),
      h('div', { class: 'legend' }, series.map((s) => h('span', {}, h('span', { class: 'swatch', 'data-color': s.color }), s.name))),
      chart,
      records && records.length >= RECORDS ? h('div', { class: 'note', text: `The chart uses the latest ${RECORDS} records of the period; totals cover all of it.` }) : null,
      h('div', { class: 'scroll' }, h('table', { class: 'data cards' },
        h('thead', {}, h('tr', {}, [LABEL[groupBy], 'Requests', 'Tokens in', 'Tokens out', 'Cost'].map((t, i) => h('th', { class: i ? 'num' : null, text: t })))),
        h('tbody', {}, groups.map(([name, g]) => h('tr', {},
          cell(LABEL[groupBy], { class: 'wrap-any' }, h('span', { class: 'swatch', 'data-color': colorOf(name || NONE) }), name || NONE),
          cell('Requests', { class: 'num' }, int(g.request_count)),
          cell('Tokens in', { class: 'num' }, int(g.total_tokens_in)),
          cell('Tokens out', { class: 'num' }, int(g.total_tokens_out)),
          cell('Cost', { class: 'num nowrap' }, usd(g.total_cost_usd), ' ',
            h('span', { class: 'share', 'data-share': biggest ? (g.total_cost_usd || 0) / biggest : 0 }))))))))
    // Colours and widths are set through the CSSOM: the page's CSP forbids inline style attributes.
    for (const el of body.querySelectorAll('[data-color]')) el.style.background = el.dataset.color
    for (const el of body.querySelectorAll('[data-share]')) el.style.width = `${Math.round(Number(el.dataset.share) * 48)}px`
    stackedBars(chart, { buckets, series, format: usd, axis: usdAxis })
  }

  const load = async () => {
    const from = new Date(rangeStart(range)).toISOString()
    try {
      if (groupBy === 'agent' || groupBy === 'task') {
        const step = RANGES[range].step
        const [rows, names] = await Promise.all([
          api(`/api/llm/usage/buckets?by=${groupBy === 'agent' ? 'instance' : 'task'}&step=${step}&from=${encodeURIComponent(from)}`),
          groupBy === 'agent' ? agentNames() : null,
        ])
        const groupOf = (key) => (!key ? NONE : groupBy === 'agent' ? (names.get(key) ?? key) : `task ${key}`)
        last = { ...fromBuckets(Array.isArray(rows) ? rows : [], groupOf), records: null }
      } else {
        const [summary, records] = await Promise.all([
          api(`/api/llm/usage/summary?group_by=${groupBy}&from=${encodeURIComponent(from)}`),
          api(`/api/llm/usage?from=${encodeURIComponent(from)}&limit=${RECORDS}`),
        ])
        const list = Array.isArray(records) ? records : []
        last = { summary, records: list, entries: list.map((r) => ({ ms: Date.parse(r.created_at), group: r[groupBy], cost: r.cost_usd })) }
      }
    } catch (err) {
      last = null
      meta.textContent = ''
      return failure(body, err, err.missingEndpoint ? 'GET /api/llm/usage/summary' : 'GET /api/llm/usage', () => poll.now())
    }
    render()
  }

  const toggle = (groupId, attr, apply) => {
    const buttons = document.querySelectorAll(`#${groupId} button`)
    for (const b of buttons)
      b.addEventListener('click', () => {
        for (const x of buttons) x.setAttribute('aria-pressed', String(x === b))
        apply(b.dataset[attr])
        poll.now()
      })
  }
  toggle('llm-group', 'group', (v) => (groupBy = v))
  toggle('llm-range', 'range', (v) => (range = v))
  let width = 0
  new ResizeObserver(() => {
    if (body.clientWidth !== width) (width = body.clientWidth), render()
  }).observe(body)

  loading(body)
  const poll = every(15000, load)
  return poll
}
