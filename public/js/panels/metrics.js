// The metrics strip: GET /api/metrics (uptime, counts, binds).

import { api } from '../api.js'
import { every, failure, fill, h, int } from '../ui.js'

const CARDS = [
  ['Uptime', (m) => m.uptime],
  ['State keys', (m) => int(m.state_keys)],
  ['Instances', (m) => int(m.instances)],
  ['Last event', (m) => (m.last_event_id ? `#${int(m.last_event_id)}` : 'none yet')],
  ['API', (m) => m.api_bind, true],
  ['Dashboard', (m) => m.dashboard_bind || '—', true],
]

const cards = (m) =>
  CARDS.map(([label, value, small]) => {
    const text = m ? value(m) ?? '—' : '…'
    return h('div', { class: 'metric' },
      h('div', { class: 'label', text: label }),
      h('div', { class: small ? 'value small' : 'value', title: String(text), text }))
  })

export function metricsPanel() {
  const el = document.getElementById('metrics')
  fill(el, cards(null))
  const poll = every(5000, async () => {
    try {
      fill(el, cards(await api('/api/metrics')))
    } catch (err) {
      const box = h('div', { class: 'metric note' })
      fill(el, box)
      failure(box, err, 'GET /api/metrics', () => poll.now())
    }
  })
  return poll
}
