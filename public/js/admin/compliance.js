// Compliance (admin): the history of runs (GET /api/compliance/history), by
// instance, and a run right now (POST /api/compliance/run).

import { api } from '../api.js'
import { instanceNames, nameOf, who } from '../names.js'
import { act, cell, changed, failure, fill, h, loading, panel, stateBox, timeAgo } from '../ui.js'

export function complianceSection(root) {
  const instance = h('select', { id: 'compliance-instance', 'aria-label': 'Instance' }, h('option', { value: '', text: 'All instances' }))
  const runBtn = h('button', { class: 'btn primary', type: 'button', id: 'compliance-run', 'data-needs': 'admin', text: 'Run now' })
  const list = panel({ id: 'admin-compliance', title: 'Compliance runs', flush: true, tools: [instance, runBtn] })
  root.append(list.el)
  const result = h('div', { class: 'action-result' })
  const drawn = {}

  runBtn.addEventListener('click', () => act(runBtn, 'Running…', result, async () => {
    const r = await api('/api/compliance/run', { method: 'POST' })
    drawn.last = null
    await refresh()
    const failed = r.runs.filter((x) => !x.pass).length
    return r.count ? `Checked ${r.count} ${r.count === 1 ? 'contract' : 'contracts'} of active instances: ${failed} failing.` : 'Nothing to check: no active instance has a workspace naming a project with contracts.'
  }))
  instance.addEventListener('change', () => ((drawn.last = null), refresh()))

  async function refresh() {
    let runs, names
    try {
      const q = instance.value ? `&instance_id=${encodeURIComponent(instance.value)}` : ''
      ;[runs, names] = await Promise.all([api(`/api/compliance/history?limit=100${q}`), instanceNames()])
    } catch (err) {
      drawn.last = null
      return failure(list.body, err, 'GET /api/compliance/history', refresh)
    }
    if (!changed(drawn, [runs, [...names.keys()]])) return
    const chosen = instance.value
    fill(instance, h('option', { value: '', text: 'All instances' }),
      [...names.values()].map((i) => h('option', { value: i.id, selected: i.id === chosen, text: i.name })))
    list.meta.textContent = `${runs.length} ${runs.length === 1 ? 'run' : 'runs'}${runs.length ? ` · ${runs.filter((r) => !r.pass).length} failing` : ''}`
    if (runs.length === 0) {
      stateBox(list.body, 'empty', 'No compliance runs yet', 'Runs check the contracts of the projects named by active instances\u2019 workspaces, on a schedule or with Run now.')
      return list.body.prepend(result)
    }
    fill(list.body, result, h('table', { class: 'data cards fixed', id: 'compliance-table' },
      h('colgroup', {}, ['c-name', 'c-name', 'c-status', 'c-wide', 'c-when'].map((c) => h('col', { class: c }))),
      h('thead', {}, h('tr', {}, ['Instance', 'Project · contract', 'Result', 'Violations', 'When'].map((t) => h('th', { text: t })))),
      h('tbody', {}, runs.map((r) => h('tr', { class: r.pass ? null : 'failed', dataset: { id: r.id } },
        cell('Instance', { class: 'wrap-any', title: nameOf(names, r.instance_id) }, who(names, r.instance_id)),
        cell('Project · contract', { class: 'wrap-any' }, h('div', { class: 'mono', text: r.contract }), h('div', { class: 'sub', text: r.project })),
        cell('Result', {}, h('span', { class: `badge ${r.pass ? 'ok' : 'bad'}`, text: r.pass ? 'pass' : 'fail' })),
        cell('Violations', { class: 'wrap-any' }, r.violations.length
          ? h('ul', { class: 'violations' }, r.violations.slice(0, 5).map((v) => h('li', {}, v.endpoint ? h('span', { class: 'chip mono', text: v.endpoint }) : null, h('code', { text: v.field || '/' }), ' ', v.message)),
            r.violations.length > 5 ? h('li', { class: 'sub', text: `and ${r.violations.length - 5} more` }) : null)
          : h('span', { class: 'sub', text: 'none' })),
        cell('When', {}, timeAgo(r.run_at)))))))
  }

  loading(list.body)
  return { refresh, open: () => ((drawn.last = null), refresh()) }
}
