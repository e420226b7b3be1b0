// Contracts (admin): a project's contracts (GET /api/contracts/{project}), one
// contract's document, validating a payload against an endpoint's schema
// (POST …/validate) and a live test call (POST …/test).

import { api } from '../api.js'
import { act, cell, changed, failure, field, fill, h, loading, panel, parseJson, stateBox, timeAgo } from '../ui.js'

const enc = encodeURIComponent

export function contractsSection(root) {
  const projectInput = h('input', { type: 'text', name: 'project', placeholder: 'project', required: true, spellcheck: 'false', 'aria-label': 'Project', list: 'contract-projects' })
  const suggestions = h('datalist', { id: 'contract-projects' })
  const pick = h('form', { class: 'inline-form', id: 'contracts-project' }, projectInput, suggestions, h('button', { class: 'btn', type: 'submit', text: 'Show' }))
  const list = panel({ id: 'admin-contracts', title: 'Contracts', flush: true, tools: [pick] })
  const detail = panel({ id: 'contract-detail', title: 'Contract' })
  root.append(list.el, detail.el)
  let project = ''
  let selected = null
  let contracts = []
  const drawn = {}

  pick.addEventListener('submit', (e) => {
    e.preventDefault()
    const p = projectInput.value.trim()
    if (p) go(p, null)
  })

  const go = (p, name) => {
    project = p
    selected = name
    projectInput.value = p
    history.replaceState(null, '', `#contracts/${enc(p)}${name ? `/${enc(name)}` : ''}`)
    drawn.last = null
    loading(list.body)
    refresh()
  }

  /** Projects worth suggesting: rule projects and the last segment of instance workspaces. */
  async function suggest() {
    const [rules, instances] = await Promise.allSettled([api('/api/rules'), api('/api/instances')])
    const names = new Set()
    if (rules.status === 'fulfilled') for (const r of rules.value) if (r.project !== '_global') names.add(r.project)
    if (instances.status === 'fulfilled') for (const i of instances.value) if (i.workspace) names.add(i.workspace.replace(/[\\/]+$/, '').split(/[\\/]/).pop())
    fill(suggestions, [...names].sort().map((n) => h('option', { value: n })))
  }

  async function refresh() {
    if (!project) {
      list.meta.textContent = ''
      detail.el.hidden = true
      return stateBox(list.body, 'empty', 'Pick a project', 'Contracts are kept per project: type its name above.')
    }
    let res
    try {
      res = await api(`/api/contracts/${enc(project)}`)
    } catch (err) {
      drawn.last = null
      return failure(list.body, err, 'GET /api/contracts/{project}', refresh)
    }
    contracts = res.contracts ?? []
    if (!changed(drawn, [project, contracts, selected])) return
    list.meta.textContent = `${project} · ${contracts.length} ${contracts.length === 1 ? 'contract' : 'contracts'}`
    if (contracts.length === 0) stateBox(list.body, 'empty', `No contracts in ${project}`, ['Write one with ', h('code', { text: `PUT /api/contracts/${project}/{name}` }), ' or apply a contracts template.'])
    else
      fill(list.body, h('table', { class: 'data cards fixed', id: 'contracts-table' },
        h('colgroup', {}, ['c-name', 'c-status', 'c-wide', 'c-num', 'c-when'].map((c) => h('col', { class: c }))),
        h('thead', {}, h('tr', {}, ['Contract', 'Valid', 'Base URL', 'Endpoints', 'Updated'].map((t, i) => h('th', { class: i === 3 ? 'num' : null, text: t })))),
        h('tbody', {}, contracts.map((c) => h('tr', { class: `clickable${c.name === selected ? ' selected' : ''}`, dataset: { name: c.name }, onclick: () => go(project, c.name) },
          cell('Contract', { class: 'wrap-any' }, h('button', { type: 'button', class: 'btn link strong', text: c.name }), h('div', { class: 'sub', text: `v${c.version} · contract ${c.contract_version || '—'}` })),
          cell('Valid', {}, h('span', { class: `badge ${c.valid ? 'ok' : 'bad'}`, text: c.valid ? 'valid' : 'invalid' })),
          cell('Base URL', { class: 'wrap-any mono' }, c.base_url || h('span', { class: 'sub', text: 'none' })),
          cell('Endpoints', { class: 'num' }, String(c.endpoints?.length ?? 0)),
          cell('Updated', {}, timeAgo(c.updated_at)))))))
    await show()
  }

  async function show() {
    const c = contracts.find((x) => x.name === selected)
    detail.el.hidden = !c
    if (!c) return
    detail.meta.textContent = `${project}/${c.name}`
    let doc
    try {
      doc = await api(`/api/contracts/${enc(project)}/${enc(c.name)}`)
    } catch (err) {
      return failure(detail.body, err, 'GET /api/contracts/{project}/{name}', show)
    }
    const endpoints = c.endpoints ?? []
    const endpointSelect = () => h('select', { name: 'endpoint', 'aria-label': 'Endpoint' }, endpoints.map((e) => h('option', { value: e, text: e })))
    const base = `/api/contracts/${enc(project)}/${enc(c.name)}`

    const v = { endpoint: endpointSelect(), direction: h('select', { name: 'direction' }, ['request', 'response', 'query'].map((d) => h('option', { value: d, text: d }))), payload: h('textarea', { name: 'payload', rows: 6, spellcheck: 'false' }) }
    v.payload.value = '{}'
    const vOut = h('div', { class: 'check-result' })
    const vBtn = h('button', { class: 'btn primary', type: 'submit', text: 'Validate' })
    const validateForm = h('form', { class: 'form-grid', id: 'contract-validate' },
      field('Endpoint', v.endpoint), field('Direction', v.direction),
      h('div', { class: 'span-all' }, field('Payload (JSON)', v.payload)),
      h('div', { class: 'row span-all' }, vBtn), h('div', { class: 'span-all' }, vOut))
    validateForm.addEventListener('submit', (e) => {
      e.preventDefault()
      act(vBtn, 'Validating…', vOut, async () => {
        const r = await api(`${base}/validate`, { method: 'POST', body: { endpoint: v.endpoint.value, direction: v.direction.value, payload: parseJson(v.payload.value, 'payload') } })
        fill(vOut, verdict(r.valid, r.valid ? 'Valid' : `${r.violations.length} ${r.violations.length === 1 ? 'violation' : 'violations'}`, r.violations))
      })
    })

    const tt = { endpoint: endpointSelect(), base_url: h('input', { type: 'text', name: 'base_url', spellcheck: 'false', placeholder: c.base_url || 'http://localhost:8080/api' }), test_data: h('textarea', { name: 'test_data', rows: 3, spellcheck: 'false', placeholder: '{"id": 1}' }) }
    const tOut = h('div', { class: 'check-result' })
    const tBtn = h('button', { class: 'btn primary', type: 'submit', text: 'Run live test' })
    const testForm = h('form', { class: 'form-grid', id: 'contract-test' },
      field('Endpoint', tt.endpoint), field('Base URL', tt.base_url, c.base_url ? "empty: the contract's" : 'required: the contract has none'),
      h('div', { class: 'span-all' }, field('Test data (JSON, optional)', tt.test_data, 'body for POST/PUT/PATCH, query otherwise; fills {placeholders}')),
      h('div', { class: 'row span-all' }, tBtn), h('div', { class: 'span-all' }, tOut))
    testForm.addEventListener('submit', (e) => {
      e.preventDefault()
      act(tBtn, 'Calling…', tOut, async () => {
        const body = { endpoint: tt.endpoint.value }
        if (tt.base_url.value.trim()) body.base_url = tt.base_url.value.trim()
        if (tt.test_data.value.trim()) body.test_data = parseJson(tt.test_data.value, 'test data')
        const r = await api(`${base}/test`, { method: 'POST', body })
        const head = `${r.pass ? 'Pass' : 'Fail'} · ${r.status ?? 'no answer'} · ${r.duration_ms} ms · ${r.url}`
        fill(tOut, verdict(r.pass, head, [...(r.error ? [{ field: '', message: r.error }] : []), ...r.violations]),
          r.request_violations?.length ? h('div', { class: 'note', text: `The test data itself breaks the request schema: ${r.request_violations.map((x) => `${x.field || '/'} ${x.message}`).join('; ')}` }) : null)
      })
    })

    fill(detail.body,
      endpoints.length ? null : stateBox(h('div'), 'empty', 'This contract has no endpoints'),
      h('div', { class: 'contract-tools' },
        h('div', {}, h('h3', { text: 'Validate a payload' }), validateForm),
        h('div', { 'data-needs': 'write' }, h('h3', { text: 'Live test' }), testForm)),
      h('details', {}, h('summary', { text: 'Contract document' }), h('pre', { class: 'value', text: JSON.stringify(doc, null, 2) })))
  }

  const verdict = (ok, title, violations = []) =>
    h('div', { class: ok ? 'inline-ok' : 'inline-error', role: 'status' },
      h('div', { class: 'strong', text: title }),
      violations.length ? h('ul', { class: 'violations' }, violations.map((x) => h('li', {}, h('code', { text: x.field || '/' }), ' ', x.message))) : null)

  detail.el.hidden = true
  return {
    refresh,
    open(arg) {
      suggest()
      if (arg) {
        const [p, n] = arg.split('/')
        return go(decodeURIComponent(p), n ? decodeURIComponent(n) : null)
      }
      drawn.last = null
      return refresh()
    },
  }
}
