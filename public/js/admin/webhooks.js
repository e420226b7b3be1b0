// Webhooks (admin): create (POST /api/webhooks), the list with each hook's last
// delivery and failure count, edit (PATCH /api/webhooks/{id}), test, enable (which sends
// the kept backlog) / disable, delete; and a webhook's deliveries from the durable queue
// (GET /api/webhooks/{id}/deliveries): state, attempts, next retry, last answer, with
// redelivery of one delivery or of everything since a time.

import { api } from '../api.js'
import { act, cell, changed, commaList, confirmButton, failure, field, fill, h, loading, outcome, panel, stateBox, timeAgo } from '../ui.js'

const enc = encodeURIComponent
const STATE_BADGE = { pending: 'warn', delivered: 'ok', failed: 'bad' }

/** "in 8 s" / "8 s ago" for an instant. */
function relative(iso) {
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000)
  const abs = Math.abs(s)
  const text = abs < 60 ? `${abs} s` : abs < 3600 ? `${Math.round(abs / 60)} min` : `${(abs / 3600).toFixed(1)} h`
  return s >= 0 ? `in ${text}` : `${text} ago`
}

/** The value of a datetime-local input an hour ago (local time, minutes). */
function anHourAgo() {
  const d = new Date(Date.now() - 3600_000)
  d.setMinutes(d.getMinutes() - d.getTimezoneOffset())
  return d.toISOString().slice(0, 16)
}

export function webhooksSection(root) {
  const list = panel({ id: 'admin-webhooks', title: 'Webhooks', flush: true })
  const stateFilter = h('select', { name: 'state', 'aria-label': 'Deliveries to show' },
    h('option', { value: '', text: 'All' }), ['pending', 'delivered', 'failed'].map((s) => h('option', { value: s, text: s[0].toUpperCase() + s.slice(1) })))
  const sinceInput = h('input', { type: 'datetime-local', name: 'since', 'aria-label': 'Redeliver since', value: anHourAgo() })
  const sinceButton = h('button', { class: 'btn small', type: 'submit', text: 'Redeliver since' })
  const sinceForm = h('form', { class: 'inline-form', id: 'redeliver-since', 'data-needs': 'admin' }, sinceInput, sinceButton)
  const recent = panel({ id: 'webhook-deliveries', title: 'Deliveries', flush: true, tools: [stateFilter, sinceForm] })
  const create = panel({ id: 'webhook-create', title: 'Add a webhook' })
  root.append(list.el, recent.el, create.el)
  recent.el.hidden = true
  let selected = null
  const result = h('div', { class: 'action-result' })
  const recentResult = h('div', { class: 'action-result' })
  const drawn = {}
  /** Open edit forms by webhook id: kept across redraws, so a poll never drops what a person typed. */
  const editors = new Map()

  stateFilter.addEventListener('change', () => showDeliveries())
  sinceForm.addEventListener('submit', (e) => {
    e.preventDefault()
    if (!selected || !sinceInput.value) return
    const id = selected
    act(sinceButton, 'Queueing…', recentResult, async () => {
      const since = new Date(sinceInput.value).toISOString()
      const r = await api(`/api/webhooks/${enc(id)}/redeliver`, { method: 'POST', body: { since } })
      await showDeliveries()
      const n = `${r.redelivered} ${r.redelivered === 1 ? 'delivery' : 'deliveries'}`
      return r.active ? `Queued ${n} again, oldest first.` : `Queued ${n} again: they go once ${id} is enabled.`
    })
  })

  const f = {
    id: h('input', { type: 'text', name: 'id', required: true, spellcheck: 'false', placeholder: 'ci-notify' }),
    url: h('input', { type: 'text', name: 'url', required: true, spellcheck: 'false', placeholder: 'https://ci.example.com/hooks/muster' }),
    patterns: h('input', { type: 'text', name: 'patterns', value: '*', spellcheck: 'false' }),
    secret: h('input', { type: 'password', name: 'secret', autocomplete: 'off' }),
  }
  const createResult = h('div')
  const submit = h('button', { class: 'btn primary', type: 'submit', text: 'Create webhook' })
  const form = h('form', { class: 'form-grid', id: 'webhook-form', 'data-needs': 'admin' },
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

  /** The edit form of webhook `w` (PATCH): only what the person changed is sent; the secret is never shown. */
  function editor(w) {
    const url = h('input', { type: 'text', name: 'url', spellcheck: 'false', value: w.url })
    const patterns = h('input', { type: 'text', name: 'patterns', spellcheck: 'false', value: w.patterns.join(', ') })
    const secret = h('input', { type: 'password', name: 'secret', autocomplete: 'off', placeholder: 'unchanged' })
    const signing = h('select', { name: 'signing' }, h('option', { value: 'keep', text: 'Keep signing' }), h('option', { value: 'remove', text: 'Remove the secret' }))
    const save = h('button', { class: 'btn primary small', type: 'submit', text: 'Save' })
    const cancel = h('button', { class: 'btn small', type: 'button', text: 'Cancel' })
    const out = h('div', { class: 'span-all' })
    const el = h('form', { class: 'form-grid webhook-edit', dataset: { id: w.id } },
      field('URL', url, 'pending deliveries go here too'),
      field('Topic patterns', patterns, 'globs, comma separated'),
      field('New secret', secret, 'blank keeps the current one'),
      field('Signing', signing, 'removing it sends deliveries unsigned'),
      h('div', { class: 'row span-all' }, cancel, ' ', save), out)
    cancel.addEventListener('click', () => {
      editors.delete(w.id)
      drawn.last = null
      refresh()
    })
    el.addEventListener('submit', (e) => {
      e.preventDefault()
      act(save, 'Saving…', out, async () => {
        const body = {}
        if (url.value.trim() !== w.url) body.url = url.value.trim()
        const p = commaList(patterns.value)
        if (p.join('\n') !== w.patterns.join('\n')) body.patterns = p
        if (signing.value === 'remove') body.secret = ''
        else if (secret.value) body.secret = secret.value
        if (!Object.keys(body).length) return 'Nothing changed.'
        const hook = await api(`/api/webhooks/${enc(w.id)}`, { method: 'PATCH', body })
        editors.delete(w.id)
        outcome(result, true, `Saved ${hook.id}: ${Object.keys(body).join(', ')} changed.`)
        drawn.last = null
        await refresh()
      })
    })
    return el
  }

  const row = (w) => {
    const rowResult = h('div')
    const test = h('button', { class: 'btn small', type: 'button', 'data-needs': 'admin', text: 'Test' })
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
      fill(recentResult)
      for (const b of list.body.querySelectorAll('button[aria-pressed]')) b.setAttribute('aria-pressed', String(b === log && !!selected))
      refresh() // the list too: its last delivery may be newer than the last poll
    })
    const edit = h('button', { class: 'btn small', type: 'button', 'data-needs': 'admin', 'aria-expanded': String(editors.has(w.id)), text: 'Edit' })
    edit.addEventListener('click', () => {
      if (editors.has(w.id)) editors.delete(w.id)
      else editors.set(w.id, editor(w))
      drawn.last = null
      refresh()
    })
    const toggle = h('button', { class: 'btn small', type: 'button', 'data-needs': 'admin', text: w.active ? 'Disable' : 'Enable' })
    toggle.addEventListener('click', () => act(toggle, '…', rowResult, async () => {
      await api(`/api/webhooks/${enc(w.id)}/${w.active ? 'disable' : 'enable'}`, { method: 'POST' })
      await refresh()
      if (selected === w.id) await showDeliveries()
    }))
    const tr = h('tr', { class: w.active ? null : 'stale', dataset: { id: w.id } },
      cell('Webhook', { class: 'wrap-any' }, h('div', { class: 'mono strong', text: w.id }), h('div', { class: 'sub mono', text: w.url })),
      cell('Patterns', { class: 'wrap-any' }, w.patterns.map((p) => h('span', { class: 'chip mono', text: p }))),
      cell('State', {},
        h('span', { class: `badge ${w.active ? 'ok' : 'warn'}`, text: w.active ? 'active' : 'disabled' }),
        w.fail_count ? h('div', { class: 'sub bad-text', text: `${w.fail_count} failed in a row` }) : null),
      cell('Last delivery', {}, w.last_fired ? timeAgo(w.last_fired) : h('span', { class: 'sub', text: 'never' }),
        w.last_fired ? h('div', { class: 'sub', text: w.fail_count ? 'failed' : 'delivered' }) : null),
      cell('', { class: 'actions-cell' }, log, ' ', test, ' ', edit, ' ', toggle, ' ',
        confirmButton('Delete', 'Confirm delete', async () => {
          await api(`/api/webhooks/${enc(w.id)}`, { method: 'DELETE' })
          editors.delete(w.id)
          outcome(result, true, `Deleted ${w.id}.`)
          await refresh()
        }, { needs: 'admin', onError: (err) => outcome(rowResult, false, err.message) }),
        rowResult))
    const form = editors.get(w.id)
    return form ? [tr, h('tr', { class: 'edit-row', dataset: { edit: w.id } }, h('td', { colspan: 5 }, form))] : [tr]
  }

  /** When a delivery goes next, or why it does not. */
  function nextOf(d, hook) {
    if (d.state !== 'pending') return d.attempts ? `${d.attempts} ${d.attempts === 1 ? 'attempt' : 'attempts'}` : ''
    const tries = d.attempts ? `${d.attempts} failed; ` : ''
    if (hook && !hook.active) return `${tries}waits for Enable`
    return d.next_attempt_at ? `${tries}next ${relative(d.next_attempt_at)}` : tries
  }

  const deliveryRow = (d, hook) => {
    const redeliver = d.test ? h('span', { class: 'sub', text: 'test' }) : h('button', { class: 'btn small', type: 'button', 'data-needs': 'admin', text: 'Redeliver' })
    if (!d.test) redeliver.addEventListener('click', () => act(redeliver, '…', recentResult, async () => {
      await api(`/api/webhooks/${enc(selected)}/deliveries/${d.id}/redeliver`, { method: 'POST' })
      await showDeliveries()
      return hook && !hook.active ? `Queued #${d.id} again: it goes once ${hook.id} is enabled.` : `Queued #${d.id} again.`
    }))
    return h('tr', { class: d.state === 'failed' || (d.state === 'pending' && d.attempts) ? 'failed' : null, dataset: { delivery: d.id } },
      cell('When', {}, timeAgo(d.at ?? d.created_at)),
      cell('Event', { class: 'wrap-any' }, h('span', { class: 'mono', text: d.topic }), ' ', h('span', { class: 'sub', text: d.test ? 'test' : `#${d.event_id}` })),
      cell('State', {}, h('span', { class: `badge ${STATE_BADGE[d.state]}`, text: d.state }), h('div', { class: 'sub', text: nextOf(d, hook) })),
      cell('Result', {}, d.at ? h('span', { class: `badge ${d.ok ? 'ok' : 'bad'}`, text: d.status ?? 'no answer' }) : h('span', { class: 'sub', text: 'not tried' })),
      cell('Error', { class: 'wrap-any' }, d.error || h('span', { class: 'sub', text: '—' })),
      cell('Time', { class: 'num' }, d.duration_ms === null ? '—' : `${d.duration_ms} ms`),
      cell('', { class: 'actions-cell' }, redeliver))
  }

  /** The selected webhook's deliveries, newest first (the durable queue: pending ones with their next retry). */
  async function showDeliveries(hooks) {
    recent.el.hidden = !selected
    if (!selected) return
    const id = selected
    recent.meta.textContent = id
    try {
      const state = stateFilter.value ? `&state=${stateFilter.value}` : ''
      const [{ deliveries }, hook] = await Promise.all([
        api(`/api/webhooks/${enc(id)}/deliveries?limit=50${state}`),
        hooks ? hooks.find((w) => w.id === id) : api(`/api/webhooks/${enc(id)}`),
      ])
      if (deliveries.length === 0) {
        stateBox(recent.body, 'empty', stateFilter.value ? `No ${stateFilter.value} deliveries` : 'No deliveries yet', 'Each matching event, and each Test, is listed here with the receiver’s answer; failed ones are retried for about 6 hours.')
        return recent.body.prepend(recentResult)
      }
      fill(recent.body, recentResult, h('table', { class: 'data cards fixed', id: 'deliveries-table' },
        h('colgroup', {}, ['c-when', 'c-wide', 'c-wide', 'c-status', 'c-wide', 'c-num', 'c-actions'].map((c) => h('col', { class: c }))),
        h('thead', {}, h('tr', {}, ['When', 'Event', 'State', 'Result', 'Error', 'Time', ''].map((t, i) => h('th', { class: i === 5 ? 'num' : null, text: t })))),
        h('tbody', {}, deliveries.map((d) => deliveryRow(d, hook)))))
    } catch (err) {
      failure(recent.body, err, 'GET /api/webhooks/{id}/deliveries', () => showDeliveries())
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
    for (const id of editors.keys()) if (!hooks.some((w) => w.id === id)) editors.delete(id)
    await showDeliveries(hooks)
    if (!changed(drawn, hooks)) return
    list.meta.textContent = `${hooks.length} ${hooks.length === 1 ? 'webhook' : 'webhooks'}`
    if (hooks.length === 0) {
      stateBox(list.body, 'empty', 'No webhooks yet', 'Add one below: every event matching its patterns is POSTed to its URL.')
      return list.body.prepend(result)
    }
    fill(list.body, result, h('table', { class: 'data cards fixed', id: 'webhooks-table' },
      h('colgroup', {}, ['c-wide', 'c-globs', 'c-status', 'c-when', 'c-actions4'].map((c) => h('col', { class: c }))),
      h('thead', {}, h('tr', {}, ['Webhook', 'Patterns', 'State', 'Last delivery', ''].map((t) => h('th', { text: t })))),
      h('tbody', {}, hooks.flatMap(row))))
  }

  loading(list.body)
  return { refresh, open: () => ((drawn.last = null), refresh()) }
}
