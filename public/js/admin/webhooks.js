// Webhooks (admin): create (POST /api/webhooks), the list with each hook's last
// delivery attempt and failure count, its recent deliveries
// (GET /api/webhooks/{id}/deliveries), test (a signed webhook.test delivery now),
// enable / disable and delete.

import { api } from '../api.js'
import { act, cell, changed, commaList, confirmButton, failure, field, fill, h, loading, outcome, panel, stateBox, timeAgo } from '../ui.js'

const enc = encodeURIComponent

export function webhooksSection(root) {
  const list = panel({ id: 'admin-webhooks', title: 'Webhooks', flush: true })
  const create = panel({ id: 'webhook-create', title: 'Add a webhook' })
  const recent = panel({ id: 'webhook-deliveries', title: 'Recent deliveries', flush: true })
  root.append(list.el, recent.el, create.el)
  recent.el.hidden = true
  let selected = null
  const result = h('div', { class: 'action-result' })
  const drawn = {}

  const f = {
    id: h('input', { type: 'text', name: 'id', required: true, spellcheck: 'false', placeholder: 'ci-notify' }),
    url: h('input', { type: 'text', name: 'url', required: true, spellcheck: 'false', placeholder: 'https://ci.example.com/hooks/muster' }),
    patterns: h('input', { type: 'text', name: 'patterns', value: '*', spellcheck: 'false' }),
    secret: h('input', { type: 'password', name: 'secret', autocomplete: 'off' }),
  }
  const createResult = h('div')
  const submit = h('button', { class: 'btn primary', type: 'submit', text: 'Create webhook' })
  const form = h('form', { class: 'form-grid', id: 'webhook-form' },
    field('Id', f.id, '1-200 characters, no / or spaces'),
    field('URL', f.url, 'http or https'),
    field('Topic patterns', f.patterns, 'globs, comma separated'),
    field('Secret', f.secret, 'optional: signs deliveries (HMAC-SHA256)'),
    h('div', { class: 'row span-all' }, submit), h('div', { class: 'span-all' }, createResult))
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    act(submit, 'Creating…', createResult, async () => {
      const body = { id: f.id.value.trim(), url: f.url.value.trim(), patterns: commaList(f.patterns.value) }
      if (f.secret.value) body.secret = f.secret.value
      const hook = await api('/api/webhooks', { method: 'POST', body })
      form.reset()
      f.patterns.value = '*'
      await refresh()
      return `Created ${hook.id}.`
    })
  })
  fill(create.body, form)

  const row = (w) => {
    const rowResult = h('div')
    const test = h('button', { class: 'btn small', type: 'button', text: 'Test' })
    test.addEventListener('click', async () => {
      await act(test, 'Sending…', rowResult, async () => {
        await api(`/api/webhooks/${enc(w.id)}/test`, { method: 'POST' })
        return 'Test delivery answered 2xx.'
      })
      if (selected === w.id) showDeliveries()
    })
    const log = h('button', { class: 'btn small', type: 'button', 'aria-pressed': String(selected === w.id), text: 'Deliveries' })
    log.addEventListener('click', () => {
      selected = selected === w.id ? null : w.id
      for (const b of list.body.querySelectorAll('button[aria-pressed]')) b.setAttribute('aria-pressed', String(b === log && !!selected))
      refresh() // the list too: its last delivery may be newer than the last poll
    })
    const toggle = h('button', { class: 'btn small', type: 'button', text: w.active ? 'Disable' : 'Enable' })
    toggle.addEventListener('click', () => act(toggle, '…', rowResult, async () => {
      await api(`/api/webhooks/${enc(w.id)}/${w.active ? 'disable' : 'enable'}`, { method: 'POST' })
      await refresh()
    }))
    return h('tr', { class: w.active ? null : 'stale', dataset: { id: w.id } },
      cell('Webhook', { class: 'wrap-any' }, h('div', { class: 'mono strong', text: w.id }), h('div', { class: 'sub mono', text: w.url })),
      cell('Patterns', { class: 'wrap-any' }, w.patterns.map((p) => h('span', { class: 'chip mono', text: p }))),
      cell('State', {},
        h('span', { class: `badge ${w.active ? 'ok' : 'warn'}`, text: w.active ? 'active' : 'disabled' }),
        w.fail_count ? h('div', { class: 'sub bad-text', text: `${w.fail_count} failed in a row` }) : null),
      cell('Last delivery', {}, w.last_fired ? timeAgo(w.last_fired) : h('span', { class: 'sub', text: 'never' }),
        w.last_fired ? h('div', { class: 'sub', text: w.fail_count ? 'failed' : 'delivered' }) : null),
      cell('', { class: 'actions-cell' }, log, ' ', test, ' ', toggle, ' ',
        confirmButton('Delete', 'Confirm delete', async () => {
          await api(`/api/webhooks/${enc(w.id)}`, { method: 'DELETE' })
          outcome(result, true, `Deleted ${w.id}.`)
          await refresh()
        }, { onError: (err) => outcome(rowResult, false, err.message) }),
        rowResult))
  }

  /** The selected webhook's latest attempts (in memory on the server since it started). */
  async function showDeliveries() {
    recent.el.hidden = !selected
    if (!selected) return
    recent.meta.textContent = selected
    try {
      const { deliveries } = await api(`/api/webhooks/${enc(selected)}/deliveries`)
      if (deliveries.length === 0) return stateBox(recent.body, 'empty', 'No deliveries since the server started', 'Each matching event, and each Test, is listed here with the receiver’s answer.')
      fill(recent.body, h('table', { class: 'data cards fixed', id: 'deliveries-table' },
        h('colgroup', {}, ['c-when', 'c-wide', 'c-status', 'c-wide', 'c-num'].map((c) => h('col', { class: c }))),
        h('thead', {}, h('tr', {}, ['When', 'Event', 'Result', 'Error', 'Time'].map((t, i) => h('th', { class: i === 4 ? 'num' : null, text: t })))),
        h('tbody', {}, deliveries.map((d) => h('tr', { class: d.ok ? null : 'failed' },
          cell('When', {}, timeAgo(d.at)),
          cell('Event', { class: 'wrap-any' }, h('span', { class: 'mono', text: d.topic }), ' ', h('span', { class: 'sub', text: d.test ? 'test' : `#${d.event_id}` })),
          cell('Result', {}, h('span', { class: `badge ${d.ok ? 'ok' : 'bad'}`, text: d.status ?? 'no answer' })),
          cell('Error', { class: 'wrap-any' }, d.error || h('span', { class: 'sub', text: '—' })),
          cell('Time', { class: 'num' }, `${d.duration_ms} ms`))))))
    } catch (err) {
      failure(recent.body, err, 'GET /api/webhooks/{id}/deliveries', showDeliveries)
    }
  }

  async function refresh() {
    let hooks
    try {
      hooks = await api('/api/webhooks')
    } catch (err) {
      drawn.last = null
      return failure(list.body, err, 'GET /api/webhooks', refresh)
    }
    if (selected && !hooks.some((w) => w.id === selected)) selected = null
    await showDeliveries()
    if (!changed(drawn, hooks)) return
    list.meta.textContent = `${hooks.length} ${hooks.length === 1 ? 'webhook' : 'webhooks'}`
    if (hooks.length === 0) {
      stateBox(list.body, 'empty', 'No webhooks yet', 'Add one below: every event matching its patterns is POSTed to its URL.')
      return list.body.prepend(result)
    }
    fill(list.body, result, h('table', { class: 'data cards fixed', id: 'webhooks-table' },
      h('colgroup', {}, ['c-wide', 'c-globs', 'c-status', 'c-when', 'c-actions4'].map((c) => h('col', { class: c }))),
      h('thead', {}, h('tr', {}, ['Webhook', 'Patterns', 'State', 'Last delivery', ''].map((t) => h('th', { text: t })))),
      h('tbody', {}, hooks.map(row))))
  }

  loading(list.body)
  return { refresh, open: () => ((drawn.last = null), refresh()) }
}
