// The cards above the overview: the service (GET /api/metrics) and what needs a person's
// eye: held locks (GET /api/locks), failed tasks (GET /api/queues) and overdue acks
// (overdue.js). Each card links to the page that shows the detail; a card whose
// source fails says so on its own and leaves the others be. The binds go to the footer.

import { api } from '../api.js'
import { overdueMessages } from '../overdue.js'
import { every, failure, fill, h, int } from '../ui.js'

const sum = (queues, status) => queues.reduce((n, q) => n + (q.counts?.[status] ?? 0), 0)

/** [id, label, href, read() → {value, detail?, alert?}] */
const CARDS = [
  ['uptime', 'Uptime', null, async (m) => ({ value: m.uptime, detail: m.version ? `v${m.version}` : null })],
  ['instances', 'Instances', '/admin#instances', async (m) => ({ value: int(m.instances), detail: `${int(m.state_keys)} state keys` })],
  ['locks', 'Held locks', '/coordination', async () => {
    const locks = await api('/api/locks')
    const names = locks.slice(0, 3).map((l) => l.name).join(', ')
    return { value: int(locks.length), detail: locks.length ? `${names}${locks.length > 3 ? ', …' : ''}` : 'none held' }
  }],
  ['failed', 'Failed tasks', '/tasks', async () => {
    const queues = await api('/api/queues')
    const failed = sum(queues, 'failed')
    const where = queues.filter((q) => q.counts?.failed).map((q) => q.queue)
    return { value: int(failed), alert: failed > 0, detail: failed ? `in ${where.slice(0, 3).join(', ')}${where.length > 3 ? ', …' : ''}` : `${int(sum(queues, 'ready') + sum(queues, 'claimed'))} open` }
  }],
  ['overdue', 'Overdue acks', '/messages', async () => {
    const { messages, more } = await overdueMessages()
    const n = messages.length
    return { value: `${int(n)}${more ? '+' : ''}`, alert: n > 0, detail: n ? `to ${[...new Set(messages.flatMap((m) => m.to))].slice(0, 3).join(', ')}` : 'none waiting' }
  }],
  ['events', 'Last event', null, async (m) => ({ value: m.last_event_id ? `#${int(m.last_event_id)}` : 'none yet' })],
]

function card([id, label, href], got) {
  const body = [
    h('div', { class: 'label', text: label }),
    got?.error ? null : h('div', { class: 'value', title: String(got?.value ?? ''), text: got ? got.value : '…' }),
    got?.detail ? h('div', { class: 'detail', title: got.detail, text: got.detail }) : null,
  ]
  const props = { class: `metric${got?.alert ? ' alert' : ''}`, dataset: { card: id } }
  const el = href ? h('a', { ...props, href, title: `Open ${href}` }, body) : h('div', props, body)
  if (got?.error) el.append(failure(h('div'), got.error, `${label}: its API call`))
  return el
}

export function metricsPanel() {
  const el = document.getElementById('metrics')
  const footer = document.getElementById('binds')
  fill(el, CARDS.map((c) => card(c, null)))
  const poll = every(5000, async () => {
    let m
    try {
      m = await api('/api/metrics')
    } catch (err) {
      const box = h('div', { class: 'metric note' })
      fill(el, box)
      failure(box, err, 'GET /api/metrics', () => poll.now())
      return
    }
    const got = await Promise.all(CARDS.map(([, , , read]) => read(m).catch((error) => ({ error }))))
    fill(el, CARDS.map((c, i) => card(c, got[i])))
    if (footer) fill(footer, 'API ', h('code', { text: m.api_bind }), ' · dashboard ', h('code', { text: m.dashboard_bind || 'off' }), m.version ? ` · Muster ${m.version}` : '')
  })
  return poll
}
